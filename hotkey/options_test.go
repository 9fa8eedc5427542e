package hotkey

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
	}{
		{"k zero", []Option{WithK(0)}},
		{"k negative", []Option{WithK(-3)}},
		{"k huge", []Option{WithK(maxK + 1)}},
		{"window zero", []Option{WithWindow(0)}},
		{"window negative", []Option{WithWindow(-time.Second)}},
		{"tick zero", []Option{WithTick(0)}},
		{"window not a multiple of tick", []Option{WithWindow(time.Second), WithTick(300 * time.Millisecond)}},
		{"window shorter than tick", []Option{WithWindow(time.Second), WithTick(2 * time.Second)}},
		{"too many ticks", []Option{WithWindow(time.Hour), WithTick(time.Second)}},
		{"share negative", []Option{WithMinShare(-0.1)}},
		{"share over one", []Option{WithMinShare(1.5)}},
		{"share NaN", []Option{WithMinShare(math.NaN())}},
		{"sampling zero", []Option{WithSampling(0)}},
		{"nil clock", []Option{WithClock(nil)}},
		{"nil callback", []Option{WithOnChange(nil)}},
		{"empty allow prefix", []Option{WithAllowPrefix("user:", "")}},
		{"empty deny prefix", []Option{WithDenyPrefix("")}},
		{"nil filter", []Option{WithFilter(nil)}},
		{"two bad options", []Option{WithK(0), WithTick(-1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.opts...)
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New: err = %v, want ErrInvalidOption", err)
			}
			if d != nil {
				d.Close()
				t.Fatal("New returned a detector with an error")
			}
			t.Log(err)
		})
	}
}

func TestDefaultsAndEdges(t *testing.T) {
	d, err := New() // real clock and its goroutine
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{
		{WithWindow(time.Second), WithTick(time.Second)}, // one tick per window
		{WithWindow(1024 * time.Millisecond), WithTick(time.Millisecond)},
		{WithK(maxK), WithMinShare(1), WithSampling(1 << 20)},
	} {
		d, err := New(append(opts, WithClock(time.Now))...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		d.Close()
	}
}
