package cache

import (
	"math/rand/v2"
	"time"
)

// jittered spreads ttl uniformly over [ttl·(1−f), ttl·(1+f)], so that keys
// filled in the same instant do not all expire in the same instant.
func jittered(ttl time.Duration, f float64) time.Duration {
	if f == 0 {
		return ttl
	}
	d := time.Duration(float64(ttl) * (1 - f + 2*f*rand.Float64()))
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}
