package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redlock takes locks on N independent Redis masters (not replicas of each
// other, not one cluster) with the Redlock algorithm: a lock is held when a
// majority of nodes (N/2+1) granted it within its lease, and is trusted for
// the lease minus the time the acquisition took minus a clock drift
// allowance. See docs/lock.md, "Redlock: when it is and is not safe".
//
// A Redlock mutex supports Lock, TryLock, reentrancy, Extend, TTL and the
// watchdog like any Mutex. Its fencing tokens grow from one holder to the
// next like a Mutex's (see raiseFence). It has no release notifications:
// waiters retry on their jittered backoff.
type Redlock struct {
	*engine
	nodes  []redis.UniversalClient
	quorum int
	cfg    config
}

// NewRedlock returns a Redlock over nodes. Each node must be an independent
// master; using the clients of one replicated deployment would defeat the
// algorithm. Close does not close the node clients.
func NewRedlock(nodes []redis.UniversalClient, opts ...Option) (*Redlock, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: redlock needs at least one node", ErrInvalidArgument)
	}
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("%w: redlock node %d is nil", ErrInvalidArgument, i)
		}
	}
	cfg := defaultConfig()
	cfg.apply(partRedlock, opts)
	if cfg.errs.Err() != nil {
		return nil, cfg.errs.Err()
	}
	r := &Redlock{nodes: slices.Clone(nodes), quorum: len(nodes)/2 + 1, cfg: cfg}
	r.engine = newEngine(cfg.report, nil, renewEach)
	r.cfg.calls = r.engine.bound(nodes...)
	if r.cfg.opTimeout > 0 {
		r.cfg.calls = r.cfg.calls.Strict()
	}
	return r, nil
}

// Close stops the watchdog and waits for Redis calls abandoned at a
// deadline (up to 5 s), returning as Client.Close does. Held locks expire
// with their leases.
func (r *Redlock) Close() error {
	return r.engine.close()
}

// Quorum returns how many nodes must grant a lock: len(nodes)/2 + 1.
func (r *Redlock) Quorum() int { return r.quorum }

// Mutex returns the exclusive lock called name, held on a quorum of nodes.
func (r *Redlock) Mutex(name string, opts ...Option) *Mutex {
	m := &Mutex{e: r.engine, cfg: r.cfg}
	m.cfg.apply(partRedlockMutex, opts)
	base, err := baseKey(m.cfg.prefix, name)
	m.cfg.errs.Add(err)
	b := &redlockBackend{lname: name, quorum: r.quorum, cfg: &m.cfg}
	for _, n := range r.nodes {
		b.nodes = append(b.nodes, newMutexBackend(n, name, base, "", "", publisher{}, &m.cfg))
	}
	m.b = b
	return m
}

// renewEach renews a batch one hold at a time: the renewals of a Redlock or
// a MultiLock each reach several Redis deployments.
func renewEach(ctx context.Context, batch []renewReq) []renewal {
	out := make([]renewal, len(batch))
	for i, req := range batch {
		out[i].validUntil, out[i].err = req.h.b.renew(ctx, req.h.owner, req.lease)
	}
	return out
}

// redlockBackend runs every operation on all nodes at once, each call
// bounded by the node timeout, and judges the outcome by the quorum.
type redlockBackend struct {
	lname  string
	nodes  []*holdBackend
	quorum int
	cfg    *config
}

func (b *redlockBackend) name() string     { return b.lname }
func (b *redlockBackend) id() string       { return b.nodes[0].keys[0] }
func (b *redlockBackend) channel() string  { return "" }
func (b *redlockBackend) shared() bool     { return false }
func (b *redlockBackend) waitList() string { return "" }

// each runs f on every node in parallel with the node timeout.
func (b *redlockBackend) each(ctx context.Context, f func(ctx context.Context, i int, n *holdBackend)) {
	eachPart(ctx, b.nodes, b.cfg.nodeTimeout, f)
}

// eachPart runs f on every part in parallel, each call bounded by timeout
// if it is positive (else by the part's own call bounds), and returns when
// all are done.
func eachPart(ctx context.Context, parts []*holdBackend, timeout time.Duration, f func(ctx context.Context, i int, n *holdBackend)) {
	var wg sync.WaitGroup
	for i, n := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				nctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			f(nctx, i, n)
		}()
	}
	wg.Wait()
}

func (b *redlockBackend) acquire(ctx context.Context, owner string, lease time.Duration, waiting bool) (acquired, error) {
	start := time.Now()
	res := make([]acquired, len(b.nodes))
	errs := make([]error, len(b.nodes))
	b.each(ctx, func(ctx context.Context, i int, n *holdBackend) {
		res[i], errs[i] = n.acquire(ctx, owner, lease, waiting)
	})
	granted, wait := 0, time.Duration(-1)
	var holds, token int64
	var valid []time.Time
	for i, a := range res {
		switch {
		case errs[i] != nil:
		case a.holds > 0:
			granted++
			holds = max(holds, a.holds)
			token = max(token, a.token)
			valid = append(valid, a.validUntil)
		case a.wait >= 0 && (wait < 0 || a.wait < wait):
			wait = a.wait
		}
	}
	var validUntil time.Time
	if granted >= b.quorum {
		// The lock stands while a quorum holds it: until the quorum-th
		// longest lease ends.
		slices.SortFunc(valid, func(x, y time.Time) int { return y.Compare(x) })
		validUntil = valid[b.quorum-1]
	}
	why := fmt.Errorf("%d of %d nodes granted the lock (quorum %d)", granted, len(b.nodes), b.quorum)
	if granted >= b.quorum && time.Now().Before(validUntil) {
		raised := b.raiseFence(ctx, owner, token, lease, res)
		if raised >= b.quorum {
			return acquired{holds: holds, token: token, start: start, validUntil: validUntil}, nil
		}
		why = fmt.Errorf("the fencing token reached %d of %d nodes (quorum %d)", raised, len(b.nodes), b.quorum)
	} else if granted >= b.quorum {
		why = fmt.Errorf("quorum reached too late: the acquisition took longer than the lease of %v", lease)
	}
	// Not enough: give back what was granted, and what may have been
	// granted where the reply was lost.
	b.undo(ctx, owner, res, errs)
	if err := errors.Join(errs...); err != nil {
		why = kind.Errorf("%w: %w", why, err)
	}
	return acquired{wait: wait, start: start, why: why}, nil
}

// raiseFence makes token, the largest of the tokens the granting nodes drew,
// the token of the hold and the floor of the fencing counter on each of
// them, and returns on how many it succeeded. Each node draws its token with
// the same rule (one more than its counter, at least its clock), and any two
// quorums share a node: a later holder draws its token on a node where this
// token was written back while this holder had it, so it gets a larger one,
// whichever nodes its own quorum holds. A holder whose token did not reach
// a quorum gives the lock up.
func (b *redlockBackend) raiseFence(ctx context.Context, owner string, token int64, lease time.Duration, res []acquired) int {
	ok := make([]bool, len(b.nodes))
	b.each(ctx, func(ctx context.Context, i int, n *holdBackend) {
		if res[i].holds == 0 {
			return
		}
		if res[i].token == token {
			ok[i] = true
			return
		}
		v, err := call.Do(n.cfg.calls, ctx, 0, func(ctx context.Context) (int64, error) {
			return raiseFenceScript.Run(ctx, n.rdb, n.keys, owner, token, ms(lease)).Int64()
		}, nil)
		ok[i] = err == nil && v == 1
	})
	k := 0
	for _, o := range ok {
		if o {
			k++
		}
	}
	return k
}

// raiseFenceScript raises the token of ARGV[1]'s hold at KEYS[1], which is
// also the node's fencing counter (see acquireScript), to ARGV[2]. Replies
// 1, or 0 when ARGV[1] does not hold the lock there.
var raiseFenceScript = redis.NewScript(wire.LockFencedLua + wire.LockLua + `
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return 0 end
local token, n, mark, owner = fenced_of(v)
if owner ~= ARGV[1] or n < 1 then return 0 end
if tonumber(token) < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], fenced(ARGV[2], n, mark, owner), 'KEEPTTL')
end
return 1
`)

func (b *redlockBackend) undo(ctx context.Context, owner string, res []acquired, errs []error) {
	giveBackParts(ctx, owner, b.nodes, b.cfg.nodeTimeout, res, errs)
}

// giveBackParts releases, in parallel and whether or not ctx has ended,
// the holds that an acquisition over parts obtained (res[i].holds > 0) and
// those it may have obtained where the reply was lost (errs[i] ambiguous).
// An abandoned call gives its own hold back when it comes.
func giveBackParts(ctx context.Context, owner string, parts []*holdBackend, timeout time.Duration, res []acquired, errs []error) {
	eachPart(context.WithoutCancel(ctx), parts, timeout, func(ctx context.Context, i int, n *holdBackend) {
		if res[i].holds > 0 || (errs[i] != nil && ambiguous(errs[i]) && !errors.Is(errs[i], call.ErrAbandoned)) {
			if err := n.release(ctx, owner, res[i].token, false); err != nil && !errors.Is(err, ErrNotHeld) {
				n.cfg.report.Warn("cacheguard: lock: giving back a partial acquisition", err, "lock", n.lname)
			}
		}
	})
}

func (b *redlockBackend) renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error) {
	errs := make([]error, len(b.nodes))
	vu := make([]time.Time, len(b.nodes))
	b.each(ctx, func(ctx context.Context, i int, n *holdBackend) {
		vu[i], errs[i] = n.renew(ctx, owner, lease)
	})
	ok, lost := 0, 0
	var valid []time.Time
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
			valid = append(valid, vu[i])
		case errors.Is(err, ErrLost):
			lost++
		}
	}
	if ok >= b.quorum {
		slices.SortFunc(valid, func(x, y time.Time) int { return y.Compare(x) })
		if v := valid[b.quorum-1]; time.Now().Before(v) {
			return v, nil
		}
	}
	if lost > len(b.nodes)-b.quorum {
		return time.Time{}, lostf("%q: only %d of %d nodes still hold the lock (quorum %d)", b.lname, len(b.nodes)-lost, len(b.nodes), b.quorum)
	}
	return time.Time{}, kind.Errorf("cacheguard: lock: renew %q: %d of %d nodes renewed (quorum %d): %w", b.lname, ok, len(b.nodes), b.quorum, errors.Join(errs...))
}

func (b *redlockBackend) release(ctx context.Context, owner string, token int64, all bool) error {
	errs := make([]error, len(b.nodes))
	b.each(ctx, func(ctx context.Context, i int, n *holdBackend) {
		errs[i] = n.release(ctx, owner, token, all)
	})
	released, notHeld := 0, 0
	var failed []error
	for _, err := range errs {
		switch {
		case err == nil:
			released++
		case errors.Is(err, ErrNotHeld):
			notHeld++
		default:
			failed = append(failed, err)
		}
	}
	if released+notHeld < b.quorum {
		return kind.Errorf("cacheguard: lock: release %q: %d of %d nodes answered (quorum %d): %w", b.lname, released+notHeld, len(b.nodes), b.quorum, errors.Join(failed...))
	}
	if released == 0 {
		return fmt.Errorf("%w: %q", ErrNotHeld, b.lname)
	}
	return nil
}

func (b *redlockBackend) ttl(ctx context.Context, owner string) (time.Duration, error) {
	ttls := make([]time.Duration, len(b.nodes))
	errs := make([]error, len(b.nodes))
	b.each(ctx, func(ctx context.Context, i int, n *holdBackend) {
		ttls[i], errs[i] = n.ttl(ctx, owner)
	})
	var held []time.Duration
	for i, err := range errs {
		if err == nil {
			held = append(held, ttls[i])
		}
	}
	if len(held) < b.quorum {
		return 0, fmt.Errorf("%w: %q: held on %d of %d nodes (quorum %d)", ErrNotHeld, b.lname, len(held), len(b.nodes), b.quorum)
	}
	// The lock stands while a quorum holds it: the quorum-th longest lease.
	slices.Sort(held)
	slices.Reverse(held)
	return held[b.quorum-1], nil
}
