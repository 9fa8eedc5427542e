package stock

import (
	"errors"
	"strings"
	"testing"
)

// One Option type configures an Inventory, a Consumer and an Admission;
// each constructor refuses the options of the others, naming them, and
// accepts the ones they share.
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
			[]Option{WithBatch(1), WithSKURate(Rate{}), WithInventory(inv)},
			[]Option{WithLogger(quiet), WithNamespace("ns")}},
		{"NewConsumer", func(o Option) error { _, err := NewConsumer(inv, sink, o); return err },
			[]Option{WithBuckets(2), WithNamespace("ns"), WithInstances(2)},
			[]Option{WithLogger(quiet), WithBatch(3)}},
		{"NewAdmission", func(o Option) error { _, err := NewAdmission(rdb, o); return err },
			[]Option{WithBuckets(2), WithClaimIdle(0)},
			[]Option{WithLogger(quiet), WithNamespace("ns"), WithInventory(inv), WithUserRate(Rate{Count: 1, Per: 1})}},
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
		if err := c.new(nil); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s, nil option: %v", c.name, err)
		}
	}
	if _, err := NewAdmission(rdb, WithSKURate(Rate{Count: 1})); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a rate without a period: %v", err)
	}
}
