package call

import (
	"math/rand/v2"
	"time"
)

// Backoff paces retries: the first pause is about Min, each next one about
// twice the last, capped at Max, each jittered (see Jitter). The zero value
// pauses 0; set Min and Max (0 < Min <= Max) before the first Next. Not safe
// for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the pause before the next attempt and doubles the step.
func (b *Backoff) Next() time.Duration {
	if b.cur == 0 {
		b.cur = b.Min
	} else {
		b.cur = min(2*b.cur, b.Max)
	}
	return Jitter(b.cur)
}

// Reset starts the next pause from Min again.
func (b *Backoff) Reset() { b.cur = 0 }

// Step is the unjittered pause before attempt n+1 after n failed attempts
// (n >= 1): min doubled n-1 times, capped at max.
func Step(min, max time.Duration, n int) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		if d > max/2 {
			return max
		}
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// Jitter returns a pause uniform in [d/2, d] (equal jitter); 0 for d <= 0.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
