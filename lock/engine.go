package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/redis/go-redis/v9"
)

// engine is what a Client and a Redlock share: taking locks (waiting when
// asked), the watchdog, release notifications and the lifecycle.
type engine struct {
	wd     *watchdog
	ntf    *notifier // nil when releases are not announced (Redlock)
	report option.Reporter
	done   chan struct{}

	mu     sync.Mutex
	closed bool
	bg     sync.WaitGroup // best-effort cleanups

	// inflight counts Redis calls running on goroutines of their own
	// (see bounded.go), including those abandoned at a deadline: Close
	// waits for them, up to closeWait.
	inflight call.Flight

	observerPanics atomic.Uint64 // see Stats (observe.go)

	// hookWaiting, when set by tests, is called each time a Lock is about to
	// block: its release subscription (if any) is confirmed and its last
	// attempt failed.
	hookWaiting func(lockName string)
	// hookMultiPart, when set by tests, is called before a MultiLock
	// attempt takes its i-th lock.
	hookMultiPart func(i int)
}

func newEngine(report option.Reporter, ntf *notifier, renew func(context.Context, []renewReq) []renewal) *engine {
	return &engine{
		wd:     newWatchdog(report, renew),
		ntf:    ntf,
		report: report,
		done:   make(chan struct{}),
	}
}

func (e *engine) close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.done)
	e.mu.Unlock()
	e.wd.close()
	if e.ntf != nil {
		e.ntf.close()
	}
	e.bg.Wait()
	if !e.inflight.Wait(closeWait) {
		return kind.Errorf("cacheguard: lock: close: Redis calls still running after %v: %w", closeWait, context.DeadlineExceeded)
	}
	return nil
}

// bound returns how calls on clients are bounded, counted in e.
func (e *engine) bound(clients ...redis.UniversalClient) call.Bound {
	return call.For(clients...).Counting(&e.inflight).RedisAs(ErrRedis)
}

func (e *engine) isClosed() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// background runs f on a goroutine that Close waits for; after Close it does
// nothing and returns false.
func (e *engine) background(f func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		f()
	}()
	return true
}

// obtain takes the lock of b, waiting for it when wait is set.
func (e *engine) obtain(ctx context.Context, b backend, cfg *config, wait bool) (hd *Handle, err error) {
	defer e.observeObtain(cfg, b)(&hd, &err)
	if cfg.errs.Err() != nil {
		return nil, cfg.errs.Err()
	}
	if err := ctx.Err(); err != nil {
		return nil, notObtained(b.name(), err)
	}
	if e.isClosed() {
		return nil, ErrClosed
	}
	owner, reentrant := OwnerFromContext(ctx)
	if !reentrant {
		owner = newOwner()
	}
	if wait && !reentrant && e.starving(b) {
		// Queue behind this client's waiters instead of barging in.
		return e.wait(ctx, b, owner, cfg, reentrant, acquired{wait: -1})
	}
	a, err := e.try(ctx, b, owner, cfg, reentrant, wait)
	if wait && call.TimedOut(ctx, err) {
		err, a, owner = nil, acquired{wait: -1}, e.retryOwner(owner, reentrant)
	}
	if err != nil || a.holds > 0 {
		return e.handle(ctx, b, owner, cfg, a, err)
	}
	if !wait {
		return nil, refused(b, a)
	}
	return e.wait(ctx, b, owner, cfg, reentrant, a)
}

// starveAfter is how long a waiter may lose to callers that barge in (try
// the lock without waiting) before they must queue behind it. Barging keeps
// a hot lock busy (the releaser, already running, usually wins), so it is
// allowed until it starts to starve someone, as in sync.Mutex.
const starveAfter = 2 * time.Millisecond

// starving reports whether a new Lock of b should queue behind this client's
// waiters rather than try at once. Only exclusive locks queue: readers do
// not exclude each other.
func (e *engine) starving(b backend) bool {
	return e.ntf != nil && !b.shared() && b.channel() != "" && e.ntf.starving(b.channel(), starveAfter)
}

func refused(b backend, a acquired) error {
	if a.why != nil {
		return kind.Errorf("%w: %q: %w", ErrNotObtained, b.name(), a.why)
	}
	return fmt.Errorf("%w: %q is held by another owner", ErrNotObtained, b.name())
}

// try makes one attempt.
func (e *engine) try(ctx context.Context, b backend, owner string, cfg *config, reentrant, waiting bool) (acquired, error) {
	a, err := b.acquire(ctx, owner, cfg.lease, waiting)
	if err == nil {
		return a, nil
	}
	if ambiguous(err) && !reentrant && !errors.Is(err, call.ErrAbandoned) {
		// The script may have run although the reply was lost: free the
		// lock it may have taken rather than leave it until the lease ends.
		// A reentrant owner is left alone; its extra hold, if any, lapses
		// with the lease once its other handles are unlocked.
		e.background(func() {
			cctx, cancel := context.WithTimeout(context.Background(), min(cfg.lease, time.Second))
			defer cancel()
			if err := b.release(cctx, owner, 0, true); err != nil && !errors.Is(err, ErrNotHeld) {
				e.report.Warn("cacheguard: lock: cleanup after a failed acquire", err, "lock", b.name())
			}
		})
	}
	if ctx.Err() != nil {
		return a, kind.Wrap(notObtained(b.name(), ctx.Err()), "", err)
	}
	if call.TimedOut(ctx, err) {
		return a, kind.Wrap(ErrNotObtained, "", err)
	}
	return a, err
}

// ambiguous reports whether err leaves unknown whether the command ran:
// anything but an error reply from Redis or a refusal by the script.
func ambiguous(err error) bool {
	var re redis.Error
	return !errors.As(err, &re) && !errors.Is(err, ErrUpgrade)
}

func (e *engine) handle(ctx context.Context, b backend, owner string, cfg *config, a acquired, err error) (*Handle, error) {
	if err != nil {
		return nil, err
	}
	hd, err := e.wd.attach(b, owner, a, cfg.lease, !cfg.fixed, ctx)
	if err != nil {
		// Closed while acquiring: nothing would renew or track the lock.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(cfg.lease, time.Second))
		defer cancel()
		if rerr := b.release(rctx, owner, a.token, false); rerr != nil {
			e.report.Warn("cacheguard: lock: release after close", rerr, "lock", b.name())
		}
		return nil, err
	}
	hd.e = e
	return hd, nil
}

// wait retries until the lock is obtained or ctx ends. A waiter is woken by
// the release notification, or else by its backoff timer; each pause is
// capped by the remaining lease of the current holder, so a holder that died
// costs at most its lease.
func (e *engine) wait(ctx context.Context, b backend, owner string, cfg *config, reentrant bool, a acquired) (*Handle, error) {
	var w *waiter
	obtained := false
	if e.ntf != nil && b.channel() != "" {
		w = e.ntf.join(ctx, b.channel(), b.waitList(), b.shared())
		if w != nil {
			defer func() { e.ntf.leave(w, obtained) }()
		}
	}
	var wake, ready <-chan struct{}
	if w != nil {
		wake, ready = w.c, w.ready
	}
	bo := call.Backoff{Min: cfg.minBackoff, Max: cfg.maxBackoff}
	hb, _ := b.(*holdBackend)
	queues := hb != nil && hb.queues
	if queues {
		// A waiting writer renews its place ahead of new readers well
		// within the mark's life.
		bo.Max = min(bo.Max, cfg.markTTL()/3)
		bo.Min = min(bo.Min, bo.Max)
		defer func() {
			if !obtained {
				giveUp := func() {
					ctx, cancel := context.WithTimeout(context.Background(), cfg.releaseTimeout())
					defer cancel()
					hb.giveUp(ctx, owner)
				}
				if !e.background(giveUp) {
					giveUp()
				}
			}
		}()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		delay := bo.Next()
		if a.wait >= 0 && a.wait+time.Millisecond < delay {
			delay = a.wait + time.Millisecond
		}
		if ready == nil && e.hookWaiting != nil {
			e.hookWaiting(b.name())
		}
		timer.Reset(delay)
		select {
		case <-wake:
		case <-ready:
			// Subscribed: a release just before may have gone unheard, so
			// try again now rather than sleep.
			ready = nil
		case <-timer.C:
		case <-ctx.Done():
			return nil, notObtained(b.name(), ctx.Err())
		case <-e.done:
			return nil, ErrClosed
		}
		var err error
		a, err = e.try(ctx, b, owner, cfg, reentrant, true)
		if call.TimedOut(ctx, err) {
			// One slow call: keep waiting while the context allows.
			a, owner = acquired{wait: -1}, e.retryOwner(owner, reentrant)
			continue
		}
		if err != nil || a.holds > 0 {
			obtained = err == nil
			return e.handle(ctx, b, owner, cfg, a, err)
		}
	}
}

// retryOwner is the owner for the next attempt after one that timed out.
// The timed-out call may still take the lock, and it is given back (or
// released by try's cleanup) under the old owner id: a caller without its
// own id takes a fresh one, so that this cleanup can never release the lock
// a later attempt obtains. A reentrant owner keeps its id; its cleanup only
// drops the one hold the lost call added.
func (e *engine) retryOwner(owner string, reentrant bool) string {
	if reentrant {
		return owner
	}
	return newOwner()
}
