package transport

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A queue of reads settles at the width its reads are fastest at, wherever
// that is: the narrowest (CPU the cost, pipelines pay), the widest (the
// round trip the cost) or between, within a step of it, and never past its
// bounds. Each window's mean latency is a function of the width here, as
// a load measured over a window would make it.
func TestWidthSettlesWhereReadsAreFastest(t *testing.T) {
	for _, best := range []int{ReadsInFlight, 5, 9, MaxReadsInFlight} {
		var w width
		latency := func(width int) time.Duration {
			d := width - best
			return 100*time.Microsecond + time.Duration(d*d)*time.Microsecond
		}
		near := 0
		for i := range 400 {
			if got := w.of(); got < ReadsInFlight || got > MaxReadsInFlight {
				t.Fatalf("best %d: width %d out of [%d, %d]", best, got, ReadsInFlight, MaxReadsInFlight)
			}
			if i >= 100 && abs(w.of()-best) <= 1 {
				near++
			}
			w.observe(widthWindow*latency(w.of()), widthWindow, MaxReadsInFlight)
		}
		if near != 300 {
			t.Errorf("best %d: the width was within a step of it in %d of the last 300 windows, want all", best, near)
		}
	}
}

// A window ends on its count of reads, however they come (one at a time or
// in batches), and not before.
func TestWidthStepsOncePerWindow(t *testing.T) {
	var w width
	for range widthWindow - 1 {
		w.observe(time.Millisecond, 1, MaxReadsInFlight)
	}
	if w.of() != ReadsInFlight {
		t.Fatalf("the width moved to %d before its window ended", w.of())
	}
	w.observe(time.Millisecond, 1, MaxReadsInFlight)
	if w.of() != ReadsInFlight+1 {
		t.Fatalf("after the first window the width is %d, want %d (it starts by widening)", w.of(), ReadsInFlight+1)
	}
	w.observe(time.Duration(widthWindow)*2*time.Millisecond, widthWindow, MaxReadsInFlight) // slower: back
	if w.of() != ReadsInFlight {
		t.Fatalf("after a slower window the width is %d, want %d", w.of(), ReadsInFlight)
	}
}

// A queue that narrowed while more of its commands were under way than its
// new width gives the places beyond it back as they end, though commands
// wait; the places within the width take the waiting commands.
func TestNarrowedQueueGivesBackPlacesBeyondItsWidth(t *testing.T) {
	q := &cmdQueue{busy: 4}
	q.waiting = []*queued{{}, {}, {}}
	for busy := 3; busy >= ReadsInFlight; busy-- {
		if b := q.takeLocked(); b != nil || q.busy != busy {
			t.Fatalf("a place beyond the width took a batch (%v) or was kept (%d under way)", b, q.busy)
		}
	}
	b := q.takeLocked()
	if b == nil || len(b.cmds) != 3 || q.busy != ReadsInFlight || len(q.waiting) != 0 {
		t.Fatalf("a place within the width: batch %v, %d under way, %d waiting", b, q.busy, len(q.waiting))
	}
}

func abs(n int) int { return max(n, -n) }

// A queue of reads never grows past half its client's pool per node.
func TestWidthKeepsToHalfThePool(t *testing.T) {
	for _, tc := range []struct{ pool, want int }{{0, MaxReadsInFlight}, {6, 3}, {2, ReadsInFlight}, {100, MaxReadsInFlight}} {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: tc.pool})
		if got := widest(rdb); got != tc.want && tc.pool != 0 {
			t.Errorf("pool %d: widest %d, want %d", tc.pool, got, tc.want)
		}
		rdb.Close()
		var w width
		for range 100 {
			w.observe(widthWindow*time.Millisecond/time.Duration(w.of()), widthWindow, tc.want) // wider is faster
		}
		if w.of() != tc.want {
			t.Errorf("widest %d: the width is %d", tc.want, w.of())
		}
	}
}
