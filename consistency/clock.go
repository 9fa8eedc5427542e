package consistency

import "time"

// clock is where the queue reads the time to wait. Due times and visibility
// deadlines are not computed from it: the scripts read the Redis server's
// clock (TIME), so instances with skewed clocks agree on when a delete is
// due. The local clock only times the worker's sleeps between looks.
type clock interface {
	Now() time.Time
	NewTimer(d time.Duration) timer
}

type timer interface {
	C() <-chan time.Time
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }
