package local

import (
	"testing"
	"time"
)

// A clock whose ticker has not run since the process was frozen is brought
// up to date by the reads themselves, within a few thousand of them, whether
// or not the ticker ever runs again (GOMAXPROCS=1 before a preemption).
func TestClockCatchesUpWithoutItsTicker(t *testing.T) {
	var c coarseClock
	c.start()
	frozen := time.Now().Add(-5 * time.Second).UnixNano()
	c.now.Store(frozen) // as after a 5 s SIGSTOP; run never started
	const bound = 4096  // one read in 128 samples: (127/128)^4096 ≈ 1e-14
	for n := 1; ; n++ {
		if got := c.read(); got > frozen+int64(time.Second) {
			t.Logf("caught up after %d reads", n)
			return
		}
		if n == bound {
			t.Fatalf("the clock still reads the frozen time after %d reads", n)
		}
	}
}
