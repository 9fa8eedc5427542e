package lock

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
)

// watchdog keeps the leases of every lock one Client (or Redlock) holds. It
// renews the holds that have no fixed lease every lease/3, scheduled from the
// moment the last renewal was sent (so the schedule follows the lease, not a
// drifting ticker), and ends the holds whose lease runs out, cancelling their
// contexts.
//
// One goroutine schedules all holds; it exists only while something is held
// (and up to a second after).
// Renewals that fall due together are sent in one batch on a short-lived
// goroutine, so that a slow Redis delays no other hold's deadline: a hold
// whose renewal has not come back by its deadline is ended on time.
//
// The watchdog also indexes holds by (lock, owner), so that the handles of a
// reentrant owner share one hold, one lease and one renewal.
type watchdog struct {
	renew  func(ctx context.Context, batch []renewReq) []renewal
	report option.Reporter

	// hookRenewed, when set by tests, sees every renewal outcome.
	hookRenewed func(lockID string, err error)

	mu      sync.Mutex
	queue   holdQueue
	holds   map[holdKey]*hold
	running bool
	closed  bool
	wakeAt  time.Time // when the loop's timer fires
	kick    chan struct{}
	stop    chan struct{}
	stopCtx context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type holdKey struct{ id, owner string }

// renewReq is one renewal in a batch, with the lease copied under the lock.
type renewReq struct {
	h     *hold
	lease time.Duration
}

type renewal struct {
	validUntil time.Time
	err        error
}

func newWatchdog(report option.Reporter, renew func(context.Context, []renewReq) []renewal) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	return &watchdog{
		renew:   renew,
		report:  report,
		holds:   make(map[holdKey]*hold),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopCtx: ctx,
		cancel:  cancel,
	}
}

// attach records a successful acquisition and returns its handle: a new hold,
// or one more handle on the owner's current hold of the same lock.
func (wd *watchdog) attach(b backend, owner string, a acquired, lease time.Duration, auto bool, parent context.Context) (*Handle, error) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.closed {
		return nil, ErrClosed
	}
	k := holdKey{b.id(), owner}
	h := wd.holds[k]
	if h != nil && (a.token > h.token || !slices.Equal(a.tokens, h.tokens)) {
		// The owner's earlier hold lapsed and this acquisition started a new
		// one (a new fencing token): whoever still uses the old one must stop.
		wd.endLocked(h, lostf("%q: the lease ran out and the lock was taken again", b.name()))
		h = nil
	}
	if h == nil {
		h = &hold{b: b, owner: owner, token: a.token, tokens: a.tokens, key: k, parent: parent, idx: -1}
		wd.holds[k] = h
	}
	h.refs++
	if auto && !h.auto {
		h.auto, h.lease = true, lease
	} else if !h.auto && lease > h.lease {
		h.lease = lease
	}
	if a.validUntil.After(h.deadline) {
		h.deadline = a.validUntil
	}
	if h.auto {
		h.next = a.start.Add(h.lease / 3)
	}
	wd.scheduleLocked(h)
	return &Handle{h: h}, nil
}

// scheduleLocked puts h in the queue, or moves it to its new place.
func (wd *watchdog) scheduleLocked(h *hold) {
	if h.idx < 0 {
		heap.Push(&wd.queue, h)
	} else {
		heap.Fix(&wd.queue, h.idx)
	}
	if !wd.running {
		wd.running = true
		wd.wg.Add(1)
		go wd.loop()
		return
	}
	// The loop only needs waking if h is due before its timer fires; most
	// new holds are due a third of a lease from now, after the others.
	if h.at().Before(wd.wakeAt) {
		wd.kickLocked()
	}
}

func (wd *watchdog) kickLocked() {
	select {
	case wd.kick <- struct{}{}:
	default:
	}
}

// endLocked ends h: it leaves the queue and the index, and its contexts are
// cancelled with cause. Ending an ended hold does nothing.
func (wd *watchdog) endLocked(h *hold, cause error) {
	if h.err != nil {
		return
	}
	h.err = cause
	h.observeEnd(cause)
	if h.idx >= 0 {
		heap.Remove(&wd.queue, h.idx)
	}
	if wd.holds[h.key] == h {
		delete(wd.holds, h.key)
	}
	if h.cancel != nil {
		h.cancel(cause)
	}
}

// detach accounts for the Unlock of hd, whose release returned err.
func (wd *watchdog) detach(hd *Handle, err error) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if hd.cancel != nil {
		hd.cancel(ErrReleased)
	}
	h := hd.h
	h.refs--
	switch {
	case errors.Is(err, ErrNotHeld):
		wd.endLocked(h, lostf("%q: unlock found the lock no longer held", h.b.name()))
	case h.refs == 0:
		// A failed release still ends the hold here: renewing a lock whose
		// release may have happened would be worse than letting it expire.
		wd.endLocked(h, ErrReleased)
	}
}

// extend records a successful Handle.Extend to lease.
func (wd *watchdog) extend(h *hold, validUntil, start time.Time, lease time.Duration) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if h.err != nil {
		return
	}
	h.lease = lease
	h.deadline = validUntil
	if h.auto {
		h.next = start.Add(lease / 3)
	}
	wd.scheduleLocked(h)
}

// lose ends h because an operation found the lock gone.
func (wd *watchdog) lose(h *hold, cause error) {
	wd.mu.Lock()
	wd.endLocked(h, cause)
	wd.mu.Unlock()
}

func (wd *watchdog) loop() {
	defer wd.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wd.mu.Lock()
		if wd.closed || len(wd.queue) == 0 {
			wd.running = false
			wd.mu.Unlock()
			return
		}
		now := time.Now()
		var batch []renewReq
		for len(wd.queue) > 0 {
			h := wd.queue[0]
			if h.at().After(now) {
				break
			}
			if !now.Before(h.deadline) {
				wd.endLocked(h, h.expired())
				continue
			}
			// Due for renewal. It stays queued, now by its deadline, in
			// case the renewal does not come back in time.
			h.renewing = true
			heap.Fix(&wd.queue, 0)
			batch = append(batch, renewReq{h: h, lease: h.lease})
		}
		if len(wd.queue) == 0 {
			wd.running = false
			wd.mu.Unlock()
			return
		}
		// Ending a hold does not wake the loop (that would cost every
		// Unlock a wake-up); instead the loop looks at least once a
		// second, and exits within a second of the last hold ending.
		wait := min(wd.queue[0].at().Sub(now), idleCheck)
		wd.wakeAt = now.Add(wait)
		if len(batch) > 0 {
			wd.wg.Add(1)
			go wd.renewBatch(batch)
		}
		wd.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-wd.kick:
		case <-wd.stop:
		}
	}
}

func (wd *watchdog) renewBatch(batch []renewReq) {
	defer wd.wg.Done()
	// A renewal that comes back after every deadline of the batch is
	// useless: those holds have been ended by then.
	var deadline time.Time
	wd.mu.Lock()
	for _, r := range batch {
		if r.h.deadline.After(deadline) {
			deadline = r.h.deadline
		}
	}
	wd.mu.Unlock()
	ctx, cancel := context.WithDeadline(wd.stopCtx, deadline)
	start := time.Now()
	results := wd.renew(ctx, batch)
	cancel()

	wd.mu.Lock()
	now := time.Now()
	for i, r := range batch {
		h, res := r.h, results[i]
		h.renewing = false
		if h.err != nil {
			continue // unlocked or expired meanwhile
		}
		switch {
		case res.err == nil:
			if res.validUntil.After(h.deadline) {
				h.deadline = res.validUntil
			}
			h.next = start.Add(h.lease / 3)
			h.lastErr = nil
		case errors.Is(res.err, ErrLost):
			wd.endLocked(h, res.err)
			continue
		default:
			// Transient: try again soon, until the deadline ends the hold.
			h.lastErr = res.err
			h.next = now.Add(retryAfter(h.lease))
			wd.report.Warn("cacheguard: lock: renewal failed", res.err, "lock", h.b.name())
		}
		heap.Fix(&wd.queue, h.idx)
	}
	select {
	case wd.kick <- struct{}{}:
	default:
	}
	wd.mu.Unlock()
	if hook := wd.hookRenewed; hook != nil {
		for i, r := range batch {
			hook(r.h.key.id, results[i].err)
		}
	}
}

// idleCheck bounds the watchdog's sleep, and so how long its goroutine
// outlives the last hold.
const idleCheck = time.Second

// retryAfter is the pause before retrying a failed renewal: several tries
// fit in what is left of the lease.
func retryAfter(lease time.Duration) time.Duration {
	return max(lease/10, time.Millisecond)
}

// close ends every hold with a cause matching ErrLost and ErrClosed, stops
// the goroutines and waits for them.
func (wd *watchdog) close() {
	wd.mu.Lock()
	if wd.closed {
		wd.mu.Unlock()
		return
	}
	wd.closed = true
	for len(wd.queue) > 0 {
		wd.endLocked(wd.queue[0], closedCause)
	}
	for _, h := range wd.holds {
		wd.endLocked(h, closedCause)
	}
	close(wd.stop)
	wd.cancel()
	wd.mu.Unlock()
	wd.wg.Wait()
}

var closedCause = kind.Errorf("%w: renewals stopped (%w)", ErrLost, ErrClosed)

// holdQueue orders holds by the time the watchdog must next look at them.
type holdQueue []*hold

func (q holdQueue) Len() int           { return len(q) }
func (q holdQueue) Less(i, j int) bool { return q[i].at().Before(q[j].at()) }
func (q holdQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *holdQueue) Push(x any) {
	h := x.(*hold)
	h.idx = len(*q)
	*q = append(*q, h)
}
func (q *holdQueue) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.idx = -1
	*q = old[:len(old)-1]
	return h
}
