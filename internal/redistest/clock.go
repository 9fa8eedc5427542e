package redistest

import (
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the fallback's clock is moved on: TTLs expire up to
// a tick late, which no test may depend on anyway.
const clockTick = 10 * time.Millisecond

// runClock makes m's TTLs run down in real time, as they do on a server:
// miniredis only expires keys when told to, so code that waits for a lease
// or a lock to lapse would otherwise wait forever. It returns the function
// that stops the clock.
func runClock(m *miniredis.Miniredis) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		tick := time.NewTicker(clockTick)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return func() { close(quit); <-done }
}
