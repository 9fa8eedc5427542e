package consistency

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A delete that Redis keeps failing is retried with backoff, then moved to
// the dead letters, counted and logged.
func TestFailingDeleteRetriedThenDeadLettered(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	cacheSrv, _ := redistest.Single(t) // the cache's own Redis, which dies
	crdb := noRetryClient(t, cacheSrv)
	clk := newFakeClock()
	w := newDrainWatch()
	var logs logBuffer
	var handled sync.Map
	q := newQueue(t, rdb, withClock(clk), WithMaxAttempts(3), WithBackoff(time.Second, time.Second),
		WithTimeout(time.Second), WithVisibilityTimeout(10*time.Second),
		WithLogger(logs.logger()), WithErrorHandler(func(err error) {
			var te *TargetError
			if errors.As(err, &te) {
				handled.Store(err.Error(), te)
			}
		}),
		withHooks(hooks{afterDrain: w.hook}))
	users := register(t, q, "users", newCache[string](t, crdb))
	cacheSrv.Kill()

	wrote := false
	if err := users.Update(ctx, []string{"1", "2"}, func(context.Context) error { wrote = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !wrote || q.Stats().FirstDeleteErrors != 1 {
		t.Fatalf("write ran %v, stats %+v: a failed first delete must not stop the write", wrote, q.Stats())
	}
	clk.Advance(defaultConfig().delay)
	for attempt := 1; attempt <= 3; attempt++ {
		w.waitSettled(t, attempt)
		st := q.Stats()
		if attempt < 3 && (st.Retries != uint64(attempt) || st.DeadLettered != 0) {
			t.Fatalf("after attempt %d: %+v", attempt, st)
		}
		clk.Advance(time.Second) // the backoff is jittered within (0.5s, 1s]
	}
	st := q.Stats()
	if st.Retries != 2 || st.DeadLettered != 1 || st.Done != 0 {
		t.Fatalf("stats %+v, want 2 retries and 1 dead letter", st)
	}
	letters, err := q.DeadLetters(ctx, 10)
	if err != nil || len(letters) != 1 {
		t.Fatalf("dead letters %+v, %v", letters, err)
	}
	if l := letters[0]; l.Target != "users" || strings.Join(l.Keys, ",") != "1,2" || l.Attempts != 3 || l.Err == "" {
		t.Fatalf("dead letter %+v", l)
	}
	if n, err := q.DeadLetterCount(ctx, "users"); err != nil || n != 1 {
		t.Fatalf("dead letter count %d, %v", n, err)
	}
	if n, _ := q.Pending(ctx); n != 0 {
		t.Fatalf("%d still pending after the dead letter", n)
	}
	if !strings.Contains(logs.String(), "dead-lettered") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("no dead-letter log line in:\n%s", logs.String())
	}
	found := false
	handled.Range(func(k, v any) bool {
		te := v.(*TargetError)
		found = found || strings.Contains(k.(string), "dead-lettered") && te.Target == "users" && slices.Equal(te.Keys, []string{"1", "2"})
		return true
	})
	if !found {
		t.Fatal("error handler not told about the dead letter of users' keys 1 and 2")
	}
}

// A delete that fails while Redis is down succeeds on a retry once it is
// back.
func TestFailingDeleteRetriedUntilRedisReturns(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	cacheSrv, _ := redistest.Single(t)
	crdb := noRetryClient(t, cacheSrv)
	clk := newFakeClock()
	w := newDrainWatch()
	q := newQueue(t, rdb, withClock(clk), WithBackoff(time.Second, time.Second),
		WithTimeout(time.Second), WithVisibilityTimeout(10*time.Second),
		withHooks(hooks{afterDrain: w.hook}))
	c := newCache[string](t, crdb)
	users := register(t, q, "users", c)
	cacheSrv.Kill()
	if err := users.Update(ctx, []string{"1"}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(defaultConfig().delay)
	w.waitSettled(t, 1)
	if st := q.Stats(); st.Retries != 1 {
		t.Fatalf("stats %+v after the first failure", st)
	}
	cacheSrv.Restart()
	if err := c.Set(ctx, "1", "stale"); err != nil { // what a lagging reader would leave
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	w.waitSettled(t, 2)
	if st := q.Stats(); st.Done != 1 || st.DeadLettered != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := c.Get(ctx, "1", func(context.Context, string) (string, error) { return "", cache.ErrNotFound }); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("stale value survived the retried delete: %v", err)
	}
}

// Invalidate deletes at once; when that fails it records a retry and says
// so with ErrQueued.
func TestInvalidateQueuesFailedDelete(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	cacheSrv, _ := redistest.Single(t)
	crdb := noRetryClient(t, cacheSrv)
	clk := newFakeClock()
	w := newDrainWatch()
	q := newQueue(t, rdb, withClock(clk), WithBackoff(time.Second, time.Second),
		WithTimeout(time.Second), WithVisibilityTimeout(10*time.Second),
		withHooks(hooks{afterDrain: w.hook}))
	c := newCache[string](t, crdb)
	users := register(t, q, "users", c)
	c.Set(ctx, "1", "v")
	if err := users.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if n := crdb.Exists(ctx, prefixFor(t)+"c:1").Val(); n != 0 {
		t.Fatal("Invalidate did not delete")
	}
	cacheSrv.Kill()
	err := users.Invalidate(ctx, "1")
	if !errors.Is(err, ErrQueued) || !errors.Is(err, cache.ErrRedis) {
		t.Fatalf("err = %v, want ErrQueued wrapping ErrRedis", err)
	}
	if n, _ := q.Pending(ctx); n != 1 {
		t.Fatalf("pending %d, want the queued retry", n)
	}
	cacheSrv.Restart()
	c.Set(ctx, "1", "stale")
	clk.Advance(time.Second)
	w.waitSettled(t, 1)
	if n := crdb.Exists(ctx, prefixFor(t)+"c:1").Val(); n != 0 {
		t.Fatal("queued retry did not delete")
	}
}

// Two instances drain one queue concurrently: every recorded delete runs
// exactly once, because a claim hides its batch from the other instance.
func TestInstancesClaimDisjointBatches(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 300
		producer := newQueue(t, rdb, WithoutWorker())
		pt := register(t, producer, "users", newCache[string](t, rdb))
		for i := range n {
			if err := pt.InvalidateAfter(ctx, 0, "k"+itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		inv := newCounting(newCache[string](t, rdb))
		var ws [2]*drainWatch
		var qs [2]*Queue
		for i := range qs {
			ws[i] = newDrainWatch()
			qs[i] = newQueue(t, rdb, WithBatchSize(7), withHooks(hooks{afterDrain: ws[i].hook}))
		}
		for i := range qs { // both start draining as soon as they know the target
			register(t, qs[i], "users", inv)
		}
		limit := time.NewTimer(20 * time.Second) // a failure guard
		defer limit.Stop()
		for qs[0].Stats().Done+qs[1].Stats().Done < n {
			select {
			case <-ws[0].ch:
			case <-ws[1].ch:
			case <-limit.C:
				t.Fatalf("done %d + %d of %d", qs[0].Stats().Done, qs[1].Stats().Done, n)
			}
		}
		for i := range n {
			if c := inv.deleted("k" + itoa(i)); c != 1 {
				t.Fatalf("key k%d deleted %d times, want once", i, c)
			}
		}
		a, b := qs[0].Stats(), qs[1].Stats()
		if a.LostClaims+b.LostClaims != 0 {
			t.Fatalf("lost claims %d/%d", a.LostClaims, b.LostClaims)
		}
		t.Logf("instance A ran %d deletes, B ran %d", a.Done, b.Done)
		if n, _ := producer.Pending(ctx); n != 0 {
			t.Fatalf("%d left", n)
		}
	})
}

// An instance that claims a batch and then stalls past the visibility
// timeout loses it: another instance claims it again and runs it, and the
// stalled instance's late acknowledgement is refused.
func TestExpiredClaimPassesToAnotherInstance(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	const vis = 30 * time.Second
	producer := newQueue(t, rdb, WithoutWorker())
	pt := register(t, producer, "users", newCache[string](t, rdb))
	for i := range 3 {
		pt.InvalidateAfter(ctx, 0, "k"+itoa(i))
	}
	claimed, release := make(chan []string, 1), make(chan struct{})
	clkA := newFakeClock()
	wa := newDrainWatch()
	a := newQueue(t, rdb, withClock(clkA), WithVisibilityTimeout(vis), withHooks(hooks{
		afterClaim: func(ids []string) {
			claimed <- ids
			<-release
		},
		afterDrain: wa.hook,
	}))
	register(t, a, "users", newCache[string](t, rdb))
	idsA := await(t, claimed, "A claiming the batch") // A holds all three and stalls

	clkB := &fakeClock{now: clkA.Now()}
	clkB.Advance(vis - time.Second)
	b := newQueue(t, rdb, withClock(clkB), WithVisibilityTimeout(vis), WithoutWorker())
	register(t, b, "users", newCache[string](t, rdb))
	if n, _, err := b.drain(ctx); err != nil || n != 0 {
		t.Fatalf("B drained %d, %v while A's claim was valid", n, err)
	}
	clkB.Advance(time.Second) // A's claim expires now
	if n, _, err := b.drain(ctx); err != nil || n != 3 {
		t.Fatalf("B drained %d, %v; want the 3 taken over", n, err)
	}
	if st := b.Stats(); st.Done != 3 {
		t.Fatalf("B stats %+v", st)
	}
	close(release)
	wa.waitSettled(t, 3)
	if st := a.Stats(); st.Done != 0 || st.LostClaims != 3 {
		t.Fatalf("A stats %+v: its stale acks must be refused", st)
	}
	if len(idsA) != 3 {
		t.Fatalf("A claimed %v", idsA)
	}
}

// Entries are claimed only once due: the claim compares due times with the
// server's clock (here pinned to the fake one).
func TestDrainRespectsDueTime(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	q := newQueue(t, rdb, withClock(clk), WithoutWorker())
	users := register(t, q, "users", newCache[string](t, rdb))
	if err := users.InvalidateAfter(ctx, time.Minute, "a"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute - time.Millisecond)
	n, next, err := q.drain(ctx)
	if err != nil || n != 0 {
		t.Fatalf("drained %d, %v before due", n, err)
	}
	if want := clk.Now().Add(time.Millisecond); !next.Equal(want) {
		t.Fatalf("next = %v, want %v", next, want)
	}
	clk.Advance(time.Millisecond)
	if n, _, err := q.drain(ctx); err != nil || n != 1 {
		t.Fatalf("drained %d, %v when due", n, err)
	}
}

// Close stops the worker: no goroutine of the queue is left.
func TestCloseStopsWorker(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	q, err := New(rdb, WithPrefix(prefixFor(t)), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	register(t, q, "users", newCache[string](t, rdb))
	if !strings.Contains(stacks(), workerMark) {
		t.Fatalf("worker not running:\n%s", stacks())
	}
	q.Close()
	// Close has waited for the worker; let it finish its deferred return
	// (as goleak does) before looking.
	s := stacks()
	for i := 0; i < 1000 && strings.Contains(s, workerMark); i++ {
		runtime.Gosched()
		s = stacks()
	}
	if strings.Contains(s, workerMark) {
		t.Fatalf("worker outlived Close:\n%s", s)
	}
	if _, err := q.Register("x", newCache[string](t, rdb)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register after Close: %v", err)
	}
}

// workerMark names the worker goroutine in a stack dump, whatever frame it
// is in (before it first runs it shows only its go statement's wrapper).
const workerMark = "created by github.com/cacheguard/cacheguard/consistency.New"

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func TestOptionsAndRegisterValidate(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	for name, o := range map[string]Option{
		"prefix":     WithPrefix("a{b}"),
		"delay":      WithDelay(-1),
		"grace":      WithWriteGrace(-1),
		"attempts":   WithMaxAttempts(0),
		"backoff":    WithBackoff(2*time.Second, time.Second),
		"batch":      WithBatchSize(0),
		"visibility": WithVisibilityTimeout(time.Second), // not above two timeouts
		"poll":       WithPollInterval(0),
		"timeout":    WithTimeout(0),
		"dead limit": WithDeadLetterLimit(0),
	} {
		if _, err := New(rdb, o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	q := newQueue(t, rdb, WithoutWorker())
	c := newCache[string](t, rdb)
	register(t, q, "users", c)
	if _, err := q.Register("users", c); !errors.Is(err, ErrDuplicateTarget) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := q.Register("", c); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty name: %v", err)
	}
	if _, err := q.Register("nil", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil invalidator: %v", err)
	}
	if _, err := q.Target("nope"); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("unknown target: %v", err)
	}
	if _, err := q.Register("stale", newCounting(c), ServeStale(time.Second)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("ServeStale without MarkStale: %v", err)
	}
	if _, err := q.Register("stale0", c, ServeStale(0)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("ServeStale(0): %v", err)
	}
}

// blockingInvalidator's Delete waits for its context, as a delete stuck on
// a slow server would.
type blockingInvalidator struct{ started chan struct{} }

func (b blockingInvalidator) Delete(ctx context.Context, keys ...string) error {
	b.started <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// Close interrupts a delete in progress and puts its entry back, due at once
// and with no attempt spent, so the next instance runs it without delay.
func TestCloseReleasesInterruptedDeletes(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	a := newQueue(t, rdb, withClock(clk))
	b := blockingInvalidator{started: make(chan struct{}, 1)}
	ta := register(t, a, "users", b)
	if err := ta.InvalidateAfter(ctx, 0, "k"); err != nil {
		t.Fatal(err)
	}
	await(t, b.started, "the delete starting")
	a.Close()
	if st := a.Stats(); st.Retries != 0 || st.Done != 0 {
		t.Fatalf("A stats %+v: an interrupted delete is neither a failure nor done", st)
	}
	next := newQueue(t, rdb, withClock(clk), WithoutWorker()) // same clock: no time has passed
	inv := newCounting(newCache[string](t, rdb))
	register(t, next, "users", inv)
	if n, _, err := next.drain(ctx); err != nil || n != 1 || inv.deleted("k") != 1 {
		t.Fatalf("next instance drained %d, %v; deleted %d", n, err, inv.deleted("k"))
	}
}
