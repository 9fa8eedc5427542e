package call_test

import (
	"math"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
)

func TestStep(t *testing.T) {
	for _, c := range []struct {
		min, max time.Duration
		n        int
		want     time.Duration
	}{
		{10, 100, 1, 10}, {10, 100, 2, 20}, {10, 100, 4, 80}, {10, 100, 5, 100},
		{10, 100, 1000, 100}, {1, math.MaxInt64, 200, math.MaxInt64}, {5, 5, 0, 5},
	} {
		if got := call.Step(c.min, c.max, c.n); got != c.want {
			t.Errorf("Step(%v, %v, %d) = %v, want %v", c.min, c.max, c.n, got, c.want)
		}
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 7, time.Second, math.MaxInt64} {
		for range 100 {
			if j := call.Jitter(d); j < d/2 || j > d {
				t.Fatalf("Jitter(%v) = %v, outside [d/2, d]", d, j)
			}
		}
	}
}

func TestBackoff(t *testing.T) {
	b := call.Backoff{Min: 4 * time.Millisecond, Max: 20 * time.Millisecond}
	for i, step := range []time.Duration{4, 8, 16, 20, 20} {
		step *= time.Millisecond
		if p := b.Next(); p < step/2 || p > step {
			t.Fatalf("pause %d = %v, want within [%v, %v]", i, p, step/2, step)
		}
	}
	b.Reset()
	if p := b.Next(); p > 4*time.Millisecond {
		t.Fatalf("pause after Reset = %v, want at most Min", p)
	}
}
