package consistency

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// skewedClock is the real clock moved by a fixed offset: an instance whose
// clock is wrong.
type skewedClock struct{ off time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.off) }

// TimerAt takes a time on this clock and fires when the real clock, moved by
// the same offset, gets there.
func (c skewedClock) TimerAt(at time.Time) timer { return realClock{}.TimerAt(at.Add(-c.off)) }

// Due times and visibility deadlines come from the Redis server's clock: an
// instance whose clock runs an hour ahead neither runs a delete before it is
// due nor delays one it records, and one an hour behind neither holds claims
// for an extra hour nor runs late.
func TestDueTimesFollowServerClock(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	ns := prefixFor(t) + "q"
	honest := newQueue(t, rdb, WithoutWorker())
	ht := register(t, honest, "users", newCache[string](t, rdb))
	mk := func(off time.Duration, opts ...Option) (*Queue, *Target) {
		q, err := New(rdb, append([]Option{WithPrefix(ns), WithLogger(quiet), WithoutWorker(), withClock(skewedClock{off})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		return q, register(t, q, "users", newCache[string](t, rdb))
	}
	ahead, at := mk(time.Hour)
	var hidden []time.Duration
	behind, bt := mk(-time.Hour, withHooks(hooks{afterClaim: func(ids []string) {
		now := rdb.Time(ctx).Val()
		for _, id := range ids {
			score := rdb.ZScore(ctx, "{"+ns+"}:due:users", id).Val()
			hidden = append(hidden, time.UnixMilli(int64(score)).Sub(now))
		}
	}}))

	// Recorded by an honest instance, due in ten minutes: the fast one
	// must not run it now.
	if err := ht.InvalidateAfter(ctx, 10*time.Minute, "later"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := ahead.drain(ctx); err != nil || n != 0 {
		t.Fatalf("instance an hour ahead drained %d, %v: ran a delete 10 minutes early", n, err)
	}
	// Recorded due now by the skewed instances: the honest one runs both now.
	if err := at.InvalidateAfter(ctx, 0, "now-a"); err != nil {
		t.Fatal(err)
	}
	if err := bt.InvalidateAfter(ctx, 0, "now-b"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := honest.drain(ctx); err != nil || n != 2 {
		t.Fatalf("honest instance drained %d, %v; want both deletes recorded due now", n, err)
	}
	// Update's second delete, recorded by the fast instance, is due after
	// write grace + delay by the server's clock, not an hour later.
	if err := at.Update(ctx, []string{"u"}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	scores := rdb.ZRangeWithScores(ctx, "{"+ns+"}:due:users", 0, -1).Val()
	srv := rdb.Time(ctx).Val()
	for _, z := range scores {
		due := time.UnixMilli(int64(z.Score))
		if d := due.Sub(srv); d > 10*time.Minute+time.Second || d < -time.Second {
			t.Fatalf("entry %v due %v from the server's now; skew leaked into the due time", z.Member, d)
		}
	}
	// A claim by the slow instance hides entries for the visibility timeout
	// by the server's clock: the honest one takes them over after it, not an
	// hour later.
	if err := ht.InvalidateAfter(ctx, 0, "claimed"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := behind.drain(ctx); err != nil || n < 1 {
		t.Fatalf("slow instance drained %d, %v", n, err)
	}
	for _, d := range hidden {
		if vis := defaultConfig().visibility; d > vis+time.Second || d < vis-5*time.Second {
			t.Fatalf("claimed entry hidden for %v, want the %v visibility timeout by the server's clock", d, vis)
		}
	}
}
