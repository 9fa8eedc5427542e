package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseBound returns an upper bound of when the lock at key expires in
// Redis: the moment the PTTL reply came back plus the PTTL (the server
// computed it earlier than that).
func leaseBound(t testing.TB, rdb redis.UniversalClient, key string) time.Time {
	t.Helper()
	pttl, err := rdb.PTTL(context.Background(), key).Result()
	now := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	return now.Add(max(pttl, 0))
}

// TestValidityFollowsRedisLease: a lock held with a long fixed lease is
// re-entered with a short watchdog lease. Whatever the watchdog then sends,
// the holder's local deadline may never lie beyond the lease Redis holds.
func TestValidityFollowsRedisLease(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := ContextWithOwner(testCtx(t), "validity-owner")
	c := newClient(t, rdb)
	renewed := make(chan error, 16)
	c.wd.hookRenewed = func(_ string, err error) { renewed <- err }
	h1, err := c.Mutex("validity", WithLease(5*time.Second), WithoutWatchdog()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Unlock(ctx)
	h2, err := c.Mutex("validity", WithLease(60*time.Millisecond)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Unlock(ctx)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}
	if d, bound := h2.Deadline(), leaseBound(t, rdb, "cacheguard:lock:{validity}"); d.After(bound) {
		t.Fatalf("holder trusts the lock until %v after Redis lets it expire", d.Sub(bound))
	}
}

// gateHook holds back the reply of the first command that match accepts
// (after the server ran it) until open is closed.
type gateHook struct {
	match  func(redis.Cmder) bool
	held   chan struct{}
	open   chan struct{}
	caught atomic.Bool
}

func newGate(match func(redis.Cmder) bool) *gateHook {
	return &gateHook{match: match, held: make(chan struct{}), open: make(chan struct{})}
}

func (g *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (g *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && g.match(cmd) && g.caught.CompareAndSwap(false, true) {
			close(g.held)
			<-g.open
		}
		return err
	}
}

func isRenew(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 1 && cmd.Name() == "evalsha" && args[1] == mutexRenewScript.Hash()
}

// TestLateRenewalReply: the watchdog's renewal runs in Redis but its reply
// is late; meanwhile Extend asks for a shorter lease. The late reply may not
// move the holder's deadline past what Redis holds.
func TestLateRenewalReply(t *testing.T) {
	s, _ := redistestSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	ctx := testCtx(t)
	if err := mutexRenewScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	gate := newGate(isRenew)
	rdb.AddHook(gate)
	c := newClient(t, rdb, WithLease(600*time.Millisecond))
	renewed := make(chan error, 16)
	c.wd.hookRenewed = func(_ string, err error) { renewed <- err }
	h, err := c.Mutex("late-reply").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	<-gate.held // the renewal ran; its reply is held back
	if err := h.Extend(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	close(gate.open)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}
	if d, bound := h.Deadline(), leaseBound(t, rdb, "cacheguard:lock:{late-reply}"); d.After(bound) {
		t.Fatalf("holder trusts the lock until %v after Redis lets it expire", d.Sub(bound))
	}
}

// lateReplies delays a fraction of the replies a go-redis client receives,
// as a congested network or a descheduled process would.
type lateReplies struct {
	mu  sync.Mutex
	rnd func() float64
	max time.Duration
}

func (l *lateReplies) delay() {
	l.mu.Lock()
	p, f := l.rnd(), l.rnd()
	l.mu.Unlock()
	if p < 0.05 {
		time.Sleep(time.Duration(f * float64(l.max)))
	}
}

func (l *lateReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *lateReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		l.delay()
		return err
	}
}
func (l *lateReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		l.delay()
		return err
	}
}
