package consistency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Entries that no longer decode (garbage, or an id whose data is missing)
// claimed in the same batch as good ones: the good ones are done, the bad
// ones neither block the batch nor come back at every pass.
func TestCorruptEntriesDoNotBlockTheirBatch(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	q := newQueue(t, rdb, withClock(clk), WithoutWorker(), WithMaxAttempts(2), WithBackoff(time.Second, time.Second))
	c := newCounting(newCache[string](t, rdb))
	users := register(t, q, "users", c)
	for i := range 3 {
		if err := users.InvalidateAfter(ctx, 0, "k"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	l := newLayout(prefixFor(t)+"q", 0)
	now := float64(clk.Now().UnixMilli())
	rdb.ZAdd(ctx, l.Due("users"), redisZ("garbage", now), redisZ("nodata", now))
	rdb.HSet(ctx, l.Data, "garbage", "{not json")
	n, _, err := q.drain(ctx)
	if err != nil {
		t.Logf("drain error (tolerated): %v", err)
	}
	if n < 3 {
		t.Fatalf("drained %d", n)
	}
	for i := range 3 {
		if c.deleted("k"+itoa(i)) != 1 {
			t.Fatalf("k%d deleted %d times", i, c.deleted("k"+itoa(i)))
		}
	}
	for range 4 {
		clk.Advance(time.Minute)
		q.drain(ctx)
	}
	if p, err := q.Pending(ctx); err != nil || p != 0 {
		t.Fatalf("pending %d, %v: corrupt entries stay in the queue", p, err)
	}
	if left, _ := rdb.HLen(ctx, l.Data).Result(); left != 0 {
		t.Fatalf("%d data fields left", left)
	}
	if left, _ := rdb.HLen(ctx, l.Claims).Result(); left != 0 {
		t.Fatalf("%d claims left", left)
	}
}

// A worker whose claim expired while its delete was failing: another one
// took the entry over and did it. The first one's late failure must not put
// the entry back (nor count an attempt towards a dead letter).
func TestLateFailureAfterClaimExpiredIsRefused(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	const vis = 30 * time.Second
	producer := newQueue(t, rdb, WithoutWorker())
	pt := register(t, producer, "users", newCache[string](t, rdb))
	if err := pt.InvalidateAfter(ctx, 0, "k"); err != nil {
		t.Fatal(err)
	}
	claimed, release := make(chan []string, 1), make(chan struct{})
	clkA := newFakeClock()
	wa := newDrainWatch()
	a := newQueue(t, rdb, withClock(clkA), WithVisibilityTimeout(vis), WithMaxAttempts(1), withHooks(hooks{
		afterClaim: func(ids []string) {
			claimed <- ids
			<-release
		},
		afterDrain: wa.hook,
	}))
	register(t, a, "users", poisonInvalidator{newCache[string](t, rdb), "k"})
	await(t, claimed, "A claiming")
	clkB := &fakeClock{now: clkA.Now()}
	clkB.Advance(vis + time.Second)
	b := newQueue(t, rdb, withClock(clkB), WithVisibilityTimeout(vis), WithoutWorker())
	cb := newCounting(newCache[string](t, rdb))
	register(t, b, "users", cb)
	if n, _, err := b.drain(ctx); err != nil || n != 1 || cb.deleted("k") != 1 {
		t.Fatalf("B drained %d, %v", n, err)
	}
	close(release)
	wa.wait(t, func() bool { return wa.passes >= 1 }, "A's pass")
	if st := a.Stats(); st.DeadLettered != 0 || st.Retries != 0 {
		t.Fatalf("A stats %+v: its late failure was settled", st)
	}
	if p, _ := b.Pending(ctx); p != 0 {
		t.Fatalf("pending %d after B did the delete", p)
	}
	if n, _ := b.DeadLetterCount(ctx, "users"); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
}

// Close while an Update's write is running: Close does not wait for the
// write, Update returns the write's result, and the second delete is not
// lost: another instance finds it recorded.
func TestCloseDuringUpdateKeepsSecondDelete(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	q := newQueue(t, rdb, WithWriteGrace(time.Second), WithDelay(time.Millisecond))
	users := register(t, q, "users", newCache[string](t, rdb))
	inWrite, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- users.Update(ctx, []string{"k"}, func(context.Context) error {
			close(inWrite)
			<-finish
			return nil
		})
	}()
	<-inWrite
	closed := make(chan error, 1)
	go func() { closed <- q.Close() }()
	await(t, closed, "Close returning while a write runs")
	close(finish)
	err := await(t, done, "Update returning")
	if err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("update: %v", err)
	}
	other := newQueue(t, rdb, WithoutWorker())
	oc := newCounting(newCache[string](t, rdb))
	register(t, other, "users", oc)
	if p, err := other.Pending(ctx); err != nil || p != 1 {
		t.Fatalf("pending %d, %v: the second delete was lost", p, err)
	}
}

// Redis frozen (SIGSTOP) under a running worker and writers: every call is
// bounded by its context, Close is bounded, and after the thaw the recorded
// deletes are carried out.
func TestFrozenRedisBoundedThenDrained(t *testing.T) {
	redistest.NeedServer(t)
	ctx := context.Background()
	srv, _ := redistest.RealSingle(t)
	// A default go-redis client ignores context deadlines while it waits
	// for a reply (the package doc says so): this one applies them.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	w := newDrainWatch()
	q := newQueue(t, rdb, WithTimeout(200*time.Millisecond), WithPollInterval(20*time.Millisecond), WithDelay(time.Millisecond),
		WithVisibilityTimeout(time.Second), withHooks(hooks{afterDrain: w.hook}))
	c := newCounting(newCache[string](t, rdb))
	users := register(t, q, "users", c)
	if err := users.InvalidateAfter(ctx, 0, "before"); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	var wrote atomic.Int64
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	err := users.Update(short, []string{"during"}, func(context.Context) error { wrote.Add(1); return nil })
	cancel()
	if err == nil || wrote.Load() != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("update on a frozen server: %v after %v, wrote %d", err, time.Since(start), wrote.Load())
	}
	srv.Thaw()
	w.wait(t, func() bool { return c.deleted("before") >= 1 }, "the delete recorded before the freeze")
	closed := make(chan error, 1)
	srv.Freeze()
	go func() { closed <- q.Close() }()
	await(t, closed, "Close on a frozen server")
	srv.Thaw()
}

func redisZ(member string, score float64) redis.Z { return redis.Z{Score: score, Member: member} }
