package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// Handle is one acquisition of a lock. It is safe for concurrent use.
//
// A handle's Context is cancelled as soon as the handle no longer confers the
// lock: after Unlock (cause ErrReleased), or when the lease is lost (cause
// matching ErrLost, saying why). Work done under the lock should run under
// that context, and writes to a protected resource should carry Token so the
// resource itself can refuse a holder whose lease has run out.
type Handle struct {
	h        *hold
	e        *engine
	released atomic.Bool
	watch    *watcher // the Observer, if any (observe.go)

	// guarded by e.wd.mu; created on first use of Context
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// hold is the state one owner has of one lock in one client. The handles of
// a reentrant owner share it: one lease, one renewal, one lost signal.
type hold struct {
	b      backend
	owner  string
	token  int64
	tokens []int64 // a MultiLock's: one token per lock (token is 0)
	key    holdKey
	parent context.Context // values for the hold's context

	// guarded by watchdog.mu
	refs     int           // handles not yet unlocked
	lease    time.Duration // asked of Redis at each renewal
	auto     bool          // renewed by the watchdog
	deadline time.Time     // until when the holder may trust the lock
	next     time.Time     // next renewal, when auto
	renewing bool          // a renewal is in flight
	idx      int           // position in the watchdog queue, -1 if out
	err      error         // why the hold ended; nil while held
	lastErr  error         // last failed renewal
	ctx      context.Context
	cancel   context.CancelCauseFunc
	watch    *watcher // the Observer of its loss, if any (observe.go)
}

// at is when the watchdog must next look at h: its renewal, or its deadline
// when it has none or one is in flight.
func (h *hold) at() time.Time {
	if h.auto && !h.renewing && h.next.Before(h.deadline) {
		return h.next
	}
	return h.deadline
}

// expired is the cause of a hold whose deadline passed.
func (h *hold) expired() error {
	switch {
	case h.auto && h.lastErr != nil:
		return lostf("%q: the lease ran out before a renewal succeeded: %v", h.b.name(), h.lastErr)
	case h.auto && h.renewing:
		return lostf("%q: the lease ran out before a renewal came back", h.b.name())
	case h.auto:
		// The renewal was due two thirds of a lease earlier: the process
		// was paused or starved of CPU for that long.
		return lostf("%q: the lease ran out before a renewal could be sent (process paused?)", h.b.name())
	}
	return lostf("%q: the fixed lease of %v ran out", h.b.name(), h.lease)
}

func (h *hold) contextLocked() context.Context {
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancelCause(ContextWithOwner(context.WithoutCancel(h.parent), h.owner))
		if h.err != nil {
			h.cancel(h.err)
		}
	}
	return h.ctx
}

// Name returns the lock's name.
func (hd *Handle) Name() string { return hd.h.b.name() }

// Owner returns the owner id of the hold. Passing it with ContextWithOwner (or
// passing Context, which carries it) makes further acquisitions reentrant.
func (hd *Handle) Owner() string { return hd.h.owner }

// Token returns the fencing token of the hold: a number drawn each time the
// lock passes to a new holder (one more than the last, at least the Redis
// server's clock in microseconds), so it strictly increases from one holder
// to the next, even across restarts and flushes of Redis. A resource that
// remembers the highest token it has seen and refuses lower ones cannot be
// corrupted by a holder whose lease ran out while it was paused (see
// ExecFenced and SetFenced). Reentrant handles share their hold's token; a
// read lock reports the token of the last writer while it is remembered
// (0 once no writer held the lock for a lease). A Mutex made WithoutFencing
// has no token: 0, which the fencing helpers refuse. Nor has a MultiLock:
// see Tokens.
func (hd *Handle) Token() int64 { return hd.h.token }

// Tokens returns the fencing token of each lock of a MultiLock handle, in
// the order of MultiLock.Names (0 for a lock made WithoutFencing); a
// resource guarded by several of the locks checks the token of each. For
// any other handle it returns Token alone.
func (hd *Handle) Tokens() []int64 {
	if hd.h.tokens == nil {
		return []int64{hd.h.token}
	}
	return slices.Clone(hd.h.tokens)
}

// Context returns a context that carries the owner id and the values of the
// context the lock was taken with, and is cancelled when the handle no longer
// confers the lock. context.Cause tells why.
func (hd *Handle) Context() context.Context {
	wd := hd.e.wd
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if hd.ctx == nil {
		hd.ctx, hd.cancel = context.WithCancelCause(hd.h.contextLocked())
		if hd.released.Load() {
			hd.cancel(ErrReleased)
		}
	}
	return hd.ctx
}

// Err returns nil while the handle holds the lock, ErrReleased after Unlock,
// or an error matching ErrLost that says how the lease was lost.
//
// Err reads the local clock: once the deadline has passed it reports the
// lease lost at once, without waiting for the watchdog to cancel Context
// (which, like any deadline context, happens on a timer a moment later).
// Check Err right before acting on the lock.
func (hd *Handle) Err() error {
	if hd.released.Load() {
		return ErrReleased
	}
	wd := hd.e.wd
	wd.mu.Lock()
	defer wd.mu.Unlock()
	h := hd.h
	if h.err == nil && !time.Now().Before(h.deadline) {
		wd.endLocked(h, h.expired())
	}
	return h.err
}

// Deadline returns until when the holder may trust the lock as things stand:
// the start of the last successful acquisition, renewal or extension plus
// the lease, minus the drift allowance. The watchdog moves it forward.
func (hd *Handle) Deadline() time.Time {
	hd.e.wd.mu.Lock()
	defer hd.e.wd.mu.Unlock()
	return hd.h.deadline
}

// Validity returns how much of the lease is left by the local clock (zero
// once it ran out). For a Redlock it is the validity time of the algorithm;
// for a MultiLock, the shortest of its locks'.
func (hd *Handle) Validity() time.Duration {
	return max(time.Until(hd.Deadline()), 0)
}

// TTL asks Redis for the remaining lease. It returns ErrNotHeld when the lock
// is no longer this owner's.
func (hd *Handle) TTL(ctx context.Context) (time.Duration, error) {
	if hd.e.isClosed() {
		return 0, ErrClosed
	}
	if hd.released.Load() {
		return 0, fmt.Errorf("%w: %q: unlocked", ErrNotHeld, hd.Name())
	}
	return hd.h.b.ttl(ctx, hd.h.owner)
}

// Extend makes the lease last at least d from now; it never shortens it,
// since a lease that could shrink while a renewal is on the wire would leave
// the holder unsure of how long it holds the lock. On a lock renewed by the
// watchdog, d also becomes the lease the watchdog renews. It returns an
// error matching ErrNotHeld (and ErrLost, ending the hold) when the lock was
// already lost, and ErrClosed, touching nothing, once the client is closed.
func (hd *Handle) Extend(ctx context.Context, d time.Duration) error {
	if d < minLease {
		return fmt.Errorf("cacheguard: lock: lease %v is shorter than %v", d, minLease)
	}
	if hd.e.isClosed() {
		return fmt.Errorf("%w: %q: extend", ErrClosed, hd.Name())
	}
	if hd.released.Load() {
		return fmt.Errorf("%w: %q: unlocked", ErrNotHeld, hd.Name())
	}
	start := time.Now()
	validUntil, err := hd.h.b.renew(ctx, hd.h.owner, d)
	if errors.Is(err, ErrLost) {
		hd.e.wd.lose(hd.h, err)
		return kind.Wrap(ErrNotHeld, "", err)
	}
	if err != nil {
		return err
	}
	hd.e.wd.extend(hd.h, validUntil, start, d)
	return nil
}

// Unlock gives the handle up. The lock is released in Redis when the last
// hold of its owner is unlocked, and only if that owner still holds it: a
// holder whose lease ran out gets ErrNotHeld and cannot release its
// successor's lock. Unlocking a handle again does nothing and returns nil.
//
// The release runs on its own context, detached from ctx and bounded by the
// operation timeout (WithTimeout; by default the lease, at most 5 s),
// so that a deferred Unlock whose context was cancelled still frees the lock
// at once instead of leaving it to its lease. Unlock returns when the release
// is done, or when ctx ends if ctx was still live when Unlock was called; the
// release then goes on in the background. If it fails the handle is given up
// anyway and the lock expires with its lease. After the client is closed,
// Unlock still releases the lock and returns an error matching ErrClosed.
func (hd *Handle) Unlock(ctx context.Context) error {
	if hd == nil {
		return fmt.Errorf("%w: nil handle", ErrNotHeld)
	}
	if !hd.released.CompareAndSwap(false, true) {
		return nil
	}
	// The release runs detached from ctx, bounded by its own timeout; the
	// caller waits for it while ctx allows (at most that timeout when ctx
	// has already ended).
	rctx, ended := ctx, ctx.Err() != nil
	if ended {
		rctx = context.WithoutCancel(ctx)
	}
	if rctx.Done() != nil || ended {
		// A context that cannot end needs no detaching.
		rctx = call.Detached(rctx, ended)
	}
	err := hd.h.b.release(rctx, hd.h.owner, hd.h.token, false)
	if errors.Is(err, call.ErrAbandoned) {
		// Gone on in the background; the hold ends here all the same.
		hd.e.wd.detach(hd, nil)
	} else {
		hd.e.wd.detach(hd, err)
	}
	hd.observeReleased()
	if hd.e.isClosed() {
		return fmt.Errorf("%w: %q: unlock (release: %v)", ErrClosed, hd.Name(), errOrOK(err))
	}
	return err
}

func errOrOK(err error) any {
	if err == nil {
		return "done"
	}
	return err
}
