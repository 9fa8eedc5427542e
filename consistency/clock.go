package consistency

import "time"

// clock is where the queue reads the time to wait. Due times and visibility
// deadlines are not computed from it: the scripts read the Redis server's
// clock (TIME), so instances with skewed clocks agree on when a delete is
// due. The local clock only times the worker's sleeps between looks.
//
// A timer is set for a time, not a duration: the worker chooses when to look
// next from one reading of the clock, and a clock that moves before the
// timer is set (a descheduled goroutine, a test's fake clock) must not push
// the look back by as much as it moved.
type clock interface {
	Now() time.Time
	TimerAt(at time.Time) timer
}

type timer interface {
	C() <-chan time.Time
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time             { return time.Now() }
func (realClock) TimerAt(at time.Time) timer { return realTimer{time.NewTimer(time.Until(at))} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }
