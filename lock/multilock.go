package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// MultiLock holds several locks as one, all or none: the locks of several
// names on one Redis (Client.MultiLock; on a cluster each lock lives in the
// slot of its name), or Mutexes of several Clients on independent masters
// (NewMultiLock). Lock and TryLock return one Handle for all of them.
//
// The locks are taken one after the other in a canonical order (sorted by
// key, duplicates dropped), each with one attempt; when one is refused, or
// the context ends, or the client is closed, the ones already taken are
// released before the call goes on waiting or returns, so a MultiLock never
// keeps some of its locks while it waits for the others, and two MultiLocks
// over overlapping sets cannot deadlock. A waiting Lock retries on the
// jittered backoff (it has no release notifications), each pause capped by
// the remaining lease of the holder that refused it.
//
// The handle is trusted until the earliest deadline of its locks (each one
// the time its request was sent plus the lease Redis reported, less the
// drift allowance); the watchdog renews every lock, and the handle's Context
// ends with a cause matching ErrLost as soon as any one of them is lost.
// Unlock releases every lock and returns an error (errors.Join, one per
// lock) if any of them was not released; a lost lock's siblings are
// released by Unlock too, or expire with their lease. Extend and TTL act on
// every lock (TTL reports the shortest lease).
//
// A MultiLock has no single fencing token: Handle.Token returns 0 and
// Handle.Tokens one token per lock, in the order of Names, for a resource
// that checks each lock it depends on.
type MultiLock struct {
	e   *engine
	b   *multiBackend
	cfg config
	own bool // e belongs to the MultiLock (NewMultiLock)
}

// MultiLock returns the locks of names on c's Redis, held as one (see
// MultiLock). The options override the client's; an empty list, or an
// invalid name or option, is reported by Lock and TryLock.
func (c *Client) MultiLock(names []string, opts ...Option) *MultiLock {
	ml := &MultiLock{e: c.engine, cfg: c.cfg}
	ml.cfg.apply(partMutex, opts)
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		ml.cfg.errs.Add(fmt.Errorf("%w: a multilock needs at least one name", ErrInvalidArgument))
	}
	newBackend := newMutexBackend
	if ml.cfg.unfenced {
		newBackend = newUnfencedBackend
	}
	parts := make([]*holdBackend, 0, len(names))
	for _, name := range names {
		base, err := baseKey(ml.cfg.prefix, name)
		ml.cfg.errs.Add(err)
		parts = append(parts, newBackend(c.rdb, name, base, base+wire.LockReleasedSuffix, base+wire.LockWaitersSuffix, c.pub, &ml.cfg))
	}
	ml.b = newMultiBackend(ml.e, parts)
	return ml
}

// NewMultiLock returns the Mutexes parts, made by one or several Clients
// (each on its own master), held as one (see MultiLock). A Redlock's Mutex
// cannot be a part. Each part keeps its name, key prefix and fencing; the
// options, not the parts', set the lease, watchdog, timeouts and backoff.
// The MultiLock has a watchdog of its own: Close stops it. Closing the
// parts' Clients does not affect it, and Close does not close them.
func NewMultiLock(parts []*Mutex, opts ...Option) (*MultiLock, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: a multilock needs at least one lock", ErrInvalidArgument)
	}
	ml := &MultiLock{cfg: defaultConfig(), own: true}
	ml.cfg.apply(partMultiLock, opts)
	if ml.cfg.errs.Err() != nil {
		return nil, ml.cfg.errs.Err()
	}
	var rdbs []redis.UniversalClient
	var hbs []*holdBackend
	seen := map[string]bool{}
	for i, m := range parts {
		if m == nil {
			return nil, fmt.Errorf("%w: multilock part %d is nil", ErrInvalidArgument, i)
		}
		if m.cfg.errs.Err() != nil {
			return nil, m.cfg.errs.Err()
		}
		hb, ok := m.b.(*holdBackend)
		if !ok {
			return nil, fmt.Errorf("%w: multilock part %d (%q) is a Redlock's; use Mutexes of Clients", ErrInvalidArgument, i, m.Name())
		}
		if id := partID(hb); !seen[id] {
			seen[id] = true
			part := *hb
			part.cfg = &ml.cfg // bounded and counted by the MultiLock's engine
			hbs = append(hbs, &part)
			rdbs = append(rdbs, hb.rdb)
		}
	}
	slices.SortFunc(hbs, func(x, y *holdBackend) int { return strings.Compare(partID(x), partID(y)) })
	ml.e = newEngine(ml.cfg.report, nil, renewEach)
	ml.cfg.calls = ml.e.bound(rdbs...)
	if ml.cfg.opTimeout > 0 {
		ml.cfg.calls = ml.cfg.calls.Strict()
	}
	ml.b = newMultiBackend(ml.e, hbs)
	return ml, nil
}

// partID tells one lock on one Redis from another.
func partID(b *holdBackend) string { return fmt.Sprintf("%s@%p", b.id(), b.rdb) }

// Close stops the watchdog of a MultiLock made by NewMultiLock and waits
// for its Redis calls, returning as Client.Close does; the locks it holds are no longer
// renewed. A Client's MultiLock is closed with its Client: Close does
// nothing.
func (ml *MultiLock) Close() error {
	if ml.own {
		return ml.e.close()
	}
	return nil
}

// Names returns the names of the locks, in the order they are taken (and
// of Handle.Tokens).
func (ml *MultiLock) Names() []string {
	names := make([]string, len(ml.b.parts))
	for i, p := range ml.b.parts {
		names[i] = p.name()
	}
	return names
}

// Lock takes every lock, waiting as long as ctx allows, or none. The owner
// id is taken from ctx (see ContextWithOwner): an owner that already holds
// some of the locks adds a reentrant hold to those. When ctx ends first,
// the error matches both ErrNotObtained and ctx.Err(); every lock the call
// took is released by then.
func (ml *MultiLock) Lock(ctx context.Context) (*Handle, error) {
	return ml.e.obtain(ctx, ml.b, &ml.cfg, true)
}

// TryLock takes every lock if all are free (or held by the owner in ctx),
// and otherwise releases the ones it took and returns ErrNotObtained.
func (ml *MultiLock) TryLock(ctx context.Context) (*Handle, error) {
	return ml.e.obtain(ctx, ml.b, &ml.cfg, false)
}

// multiBackend takes its parts in order, all or none, and renews, releases
// and inspects them all.
type multiBackend struct {
	e     *engine
	parts []*holdBackend
	lname string
	key   string
}

func newMultiBackend(e *engine, parts []*holdBackend) *multiBackend {
	names, ids := make([]string, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		names[i], ids[i] = p.name(), partID(p)
	}
	return &multiBackend{e: e, parts: parts,
		lname: "[" + strings.Join(names, " ") + "]",
		key:   "multi:" + strings.Join(ids, " ")}
}

func (b *multiBackend) name() string     { return b.lname }
func (b *multiBackend) id() string       { return b.key }
func (b *multiBackend) channel() string  { return "" }
func (b *multiBackend) shared() bool     { return false }
func (b *multiBackend) waitList() string { return "" }

func (b *multiBackend) acquire(ctx context.Context, owner string, lease time.Duration, _ bool) (acquired, error) {
	start := time.Now()
	n := len(b.parts)
	res, errs := make([]acquired, n), make([]error, n)
	taken := 0
	var err error
	for i, p := range b.parts {
		if hook := b.e.hookMultiPart; hook != nil {
			hook(i)
		}
		if b.e.isClosed() {
			err = fmt.Errorf("%w: %q: acquire", ErrClosed, b.lname)
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
		// One attempt, without marking the lock as waited for: nobody
		// here listens for its release.
		res[i], errs[i] = p.acquire(ctx, owner, lease, false)
		if err = errs[i]; err != nil || res[i].holds == 0 {
			break
		}
		taken++
	}
	why := error(nil)
	if taken == n {
		a := acquired{holds: res[0].holds, start: start, validUntil: res[0].validUntil, tokens: make([]int64, n)}
		for i, r := range res {
			a.holds = min(a.holds, r.holds)
			if r.validUntil.Before(a.validUntil) {
				a.validUntil = r.validUntil
			}
			a.tokens[i] = r.token
		}
		if time.Now().Before(a.validUntil) {
			return a, nil
		}
		why = fmt.Errorf("all %d locks taken too late: the acquisition took longer than the lease of %v", n, lease)
	}
	giveBackParts(ctx, owner, b.parts, 0, res, errs)
	if err != nil {
		return acquired{}, err
	}
	wait := time.Duration(-1)
	if why == nil {
		why = fmt.Errorf("%q is held by another owner (%d of %d locks were taken, and released)", b.parts[taken].name(), taken, n)
		wait = res[taken].wait
	}
	return acquired{wait: wait, start: start, why: why}, nil
}

func (b *multiBackend) renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error) {
	vu, errs := make([]time.Time, len(b.parts)), make([]error, len(b.parts))
	eachPart(ctx, b.parts, 0, func(ctx context.Context, i int, p *holdBackend) {
		vu[i], errs[i] = p.renew(ctx, owner, lease)
	})
	for _, err := range errs {
		if errors.Is(err, ErrLost) {
			return time.Time{}, fmt.Errorf("%w (one of the locks of %q)", err, b.lname)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew %q: %w", b.lname, err)
	}
	return slices.MinFunc(vu, time.Time.Compare), nil
}

// release releases every part, whatever the others answer, and reports each
// one that was not released.
func (b *multiBackend) release(ctx context.Context, owner string, _ int64, all bool) error {
	errs := make([]error, len(b.parts))
	eachPart(ctx, b.parts, 0, func(ctx context.Context, i int, p *holdBackend) {
		errs[i] = p.release(ctx, owner, 0, all)
	})
	return errors.Join(errs...)
}

func (b *multiBackend) ttl(ctx context.Context, owner string) (time.Duration, error) {
	ttls, errs := make([]time.Duration, len(b.parts)), make([]error, len(b.parts))
	eachPart(ctx, b.parts, 0, func(ctx context.Context, i int, p *holdBackend) {
		ttls[i], errs[i] = p.ttl(ctx, owner)
	})
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return slices.Min(ttls), nil
}
