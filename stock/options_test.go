package stock

import (
	"errors"
	"strings"
	"testing"
)

// One Option type configures an Inventory, a Consumer and an Admission;
// each constructor refuses the options of the others, naming them, and
// accepts the ones they share, and a nil Option.
func TestOptionsOfAnotherConstructorRefused(t *testing.T) {
	rdb := sharedSingle(t)
	inv := newInv(t, rdb)
	sink := &SQLStore{}
	for _, c := range []struct {
		name string
		new  func(Option) error
		bad  []Option
		good []Option
	}{
		{"New", func(o Option) error { _, err := New(rdb, o); return err },
			[]Option{WithBatchSize(1), WithSKURate(Rate{}), WithInventory(inv)},
			[]Option{WithLogger(quiet), WithPrefix("ns:")}},
		{"NewConsumer", func(o Option) error { _, err := NewConsumer(inv, sink, o); return err },
			[]Option{WithBuckets(2), WithPrefix("ns:"), WithInstances(2)},
			[]Option{WithLogger(quiet), WithBatchSize(3)}},
		{"NewAdmission", func(o Option) error { _, err := NewAdmission(rdb, o); return err },
			[]Option{WithBuckets(2), WithClaimIdle(0)},
			[]Option{WithLogger(quiet), WithPrefix("ns:"), WithInventory(inv), WithUserRate(Rate{Count: 1, Per: 1})}},
	} {
		for i, o := range c.bad {
			err := c.new(o)
			if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "configures") {
				t.Errorf("%s, option %d of another constructor: %v, want ErrInvalidOption saying what it configures", c.name, i, err)
			}
		}
		for i, o := range c.good {
			if err := c.new(o); err != nil {
				t.Errorf("%s, option %d: %v", c.name, i, err)
			}
		}
		// A nil Option is ignored; a nil logger stands for slog.Default().
		for _, o := range []Option{nil, WithLogger(nil)} {
			if err := c.new(o); err != nil {
				t.Errorf("%s, nil option or logger: %v", c.name, err)
			}
		}
	}
	if _, err := NewAdmission(rdb, WithSKURate(Rate{Count: 1})); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a rate without a period: %v", err)
	}
}
