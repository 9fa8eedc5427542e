package consistency

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// *cache.Cache satisfies the interfaces this package consumes.
var (
	_ Invalidator            = (*cache.Cache[string])(nil)
	_ StaleMarker            = (*cache.Cache[string])(nil)
	_ VersionedCache[string] = (*cache.Cache[string])(nil)
)

var (
	onTopologies = redistest.OnTopologies
	prefixFor    = redistest.Prefix
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newCache[V any](t *testing.T, rdb redis.UniversalClient, opts ...cache.Option) *cache.Cache[V] {
	t.Helper()
	c, err := cache.New(rdb, cache.Values[V]{}, append([]cache.Option{cache.WithPrefix(prefixFor(t) + "c:"), cache.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newQueue returns a queue in the test's own namespace with a quiet logger;
// opts come after those, so they can override them.
func newQueue(t *testing.T, rdb redis.UniversalClient, opts ...Option) *Queue {
	t.Helper()
	q, err := New(rdb, append([]Option{WithPrefix(prefixFor(t) + "q"), WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func register(t *testing.T, q *Queue, name string, inv Invalidator, opts ...TargetOption) *Target {
	t.Helper()
	tg, err := q.Register(name, inv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// fakeClock is a clock that moves only when the test says so.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clk *fakeClock
	at  time.Time
	c   chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) TimerAt(at time.Time) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clk: c, at: at, c: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock and fires the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}

// pinsServerTime makes the fake clock stand in for the server's clock in the
// queue's scripts, so that the test moves due times too.
func (c *fakeClock) pinsServerTime() {}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	for i, x := range t.clk.timers {
		if x == t {
			t.clk.timers = append(t.clk.timers[:i], t.clk.timers[i+1:]...)
			return true
		}
	}
	return false
}

// drainWatch counts the worker's passes and the entries they settled, so a
// test can wait for the worker instead of sleeping.
type drainWatch struct {
	mu      sync.Mutex
	passes  int
	settled int
	ch      chan struct{}
}

func newDrainWatch() *drainWatch { return &drainWatch{ch: make(chan struct{}, 1)} }

func (w *drainWatch) hook(n int) {
	w.mu.Lock()
	w.passes++
	w.settled += n
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// waitSettled waits until the worker has settled at least n entries.
func (w *drainWatch) waitSettled(t *testing.T, n int) {
	t.Helper()
	w.wait(t, func() bool { return w.settled >= n }, "settled entries")
}

func (w *drainWatch) wait(t *testing.T, done func() bool, what string) {
	t.Helper()
	limit := time.NewTimer(20 * time.Second) // a failure guard, not synchronisation
	defer limit.Stop()
	for {
		w.mu.Lock()
		ok, passes, settled := done(), w.passes, w.settled
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.ch:
		case <-limit.C:
			t.Fatalf("worker never got there (%s): %d passes, %d settled", what, passes, settled)
		}
	}
}

// db is a test "database": one row per key, each write a new version. Reads
// may go to a replica that applies each commit a given lag after it.
type db struct {
	mu   sync.Mutex
	rows map[string][]state
}

type state struct {
	ver     int
	deleted bool
	commit  time.Time // on the primary
	applied time.Time // on the replica
}

func newDB() *db { return &db{rows: make(map[string][]state)} }

// write commits a new version of key (or its deletion) at now, visible on
// the replica lag later. It returns the version.
func (d *db) write(key string, deleted bool, now time.Time, lag time.Duration) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.rows[key]
	s := state{ver: len(h) + 1, deleted: deleted, commit: now, applied: now.Add(lag)}
	if n := len(h); n > 0 && s.applied.Before(h[n-1].applied) {
		s.applied = h[n-1].applied // a replica applies in commit order
	}
	d.rows[key] = append(h, s)
	return s.ver
}

// primary returns the latest version of key (0 and false if none, or
// deleted).
func (d *db) primary(key string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.rows[key]
	if len(h) == 0 || h[len(h)-1].deleted {
		return 0, false
	}
	return h[len(h)-1].ver, true
}

// replica returns the version of key the replica shows at now.
func (d *db) replica(key string, now time.Time) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.rows[key]
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].applied.After(now) {
			return h[i].ver, !h[i].deleted
		}
	}
	return 0, false
}

// logBuffer is a logger writing into a buffer the test can search.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// countingInvalidator runs a real Invalidator and counts each key it
// deleted.
type countingInvalidator struct {
	inv   Invalidator
	mu    sync.Mutex
	count map[string]int
	calls atomic.Int64
}

func newCounting(inv Invalidator) *countingInvalidator {
	return &countingInvalidator{inv: inv, count: make(map[string]int)}
}

func (c *countingInvalidator) Delete(ctx context.Context, keys ...string) error {
	c.calls.Add(1)
	if err := c.inv.Delete(ctx, keys...); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.count[k]++
	}
	return nil
}

func (c *countingInvalidator) deleted(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[key]
}

// noRetryClient is a client for a server the test kills: without go-redis's
// own retries a refused connection fails at once instead of after backoff.
func noRetryClient(t *testing.T, s *redistest.Server) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// unlinkInvalidator deletes keys with a plain UNLINK (benchmarks: no cache in
// the way).
type unlinkInvalidator struct {
	unlink func(ctx context.Context, keys ...string) *redis.IntCmd
}

func (n unlinkInvalidator) Delete(ctx context.Context, keys ...string) error {
	return n.unlink(ctx, keys...).Err()
}

// await receives from ch, failing the test if nothing comes (a guard
// against hanging, not synchronisation).
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	limit := time.NewTimer(20 * time.Second)
	defer limit.Stop()
	select {
	case v := <-ch:
		return v
	case <-limit.C:
		t.Fatalf("%s never happened", what)
		panic("unreachable")
	}
}
