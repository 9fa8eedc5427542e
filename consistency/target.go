package consistency

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Invalidator removes cache entries. *cache.Cache[V] is one: its Delete
// removes values, cached absences and fill leases, so that a fill started
// before it cannot land.
type Invalidator interface {
	Delete(ctx context.Context, keys ...string) error
}

// StaleMarker marks cache entries stale instead of removing them: readers
// keep getting the old value while one caller reloads it, for at most
// maxStale. *cache.Cache[V] is one. See ServeStale.
type StaleMarker interface {
	MarkStale(ctx context.Context, maxStale time.Duration, keys ...string) error
}

// VersionKeeper deletes entries but keeps the version of versioned ones for
// hold, as a tombstone that readers miss on and that refuses older versioned
// writes. *cache.Cache[V] is one. Targets whose Invalidator is one use it
// for every invalidation (see WithTombstoneTTL), so that newest-version-wins
// survives plain deletes too.
type VersionKeeper interface {
	DeleteKeepingVersion(ctx context.Context, hold time.Duration, keys ...string) error
}

// Target is a registered Invalidator: the deletes of one cache, run now or
// recorded in the queue under the target's name. Get one from
// Queue.Register. It is safe for concurrent use.
type Target struct {
	q        *Queue
	name     string
	inv      Invalidator
	keeper   VersionKeeper // inv, if it is one
	stale    StaleMarker   // non-nil with ServeStale
	maxStale time.Duration
	replicas int // WaitReplicas: replicas that must confirm a delete
	waitFor  time.Duration
}

// TargetOption configures a Target.
type TargetOption func(*Target) error

// ServeStale makes the target's invalidations mark entries stale
// (stale-while-revalidate) rather than remove them: a hot key keeps being
// served, for at most maxStale, while exactly one caller reloads it, instead
// of every reader missing at once. The Invalidator must also be a
// StaleMarker. Off by default: a removed entry is never served again, which
// is the strong mode.
func ServeStale(maxStale time.Duration) TargetOption {
	return func(t *Target) error {
		if maxStale <= 0 {
			return fmt.Errorf("%w: max stale %v must be positive", ErrInvalidOption, maxStale)
		}
		m, ok := t.inv.(StaleMarker)
		if !ok {
			return fmt.Errorf("%w: ServeStale: %T cannot mark entries stale", ErrInvalidOption, t.inv)
		}
		t.stale, t.maxStale = m, maxStale
		return nil
	}
}

// Register names inv so that deletes recorded for it can be carried out by
// any instance that registers the same name, including after a restart.
// Every instance must register a name for the same cache (same Redis keys).
// Registering also lets this instance's worker drain the name's deletes.
func (q *Queue) Register(name string, inv Invalidator, opts ...TargetOption) (*Target, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty target name", ErrInvalidArgument)
	}
	if inv == nil {
		return nil, fmt.Errorf("%w: nil invalidator for target %q", ErrInvalidArgument, name)
	}
	t := &Target{q: q, name: name, inv: inv}
	t.keeper, _ = inv.(VersionKeeper)
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(t); err != nil {
			return nil, err
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, ErrClosed
	}
	if _, dup := q.targets[name]; dup {
		return nil, fmt.Errorf("%w: %q", ErrDuplicateTarget, name)
	}
	q.targets[name] = t
	q.order = append(q.order, name)
	// Entries left by a previous run may be due already.
	q.kick(time.Time{})
	return t, nil
}

// Target returns the target registered under name.
func (q *Queue) Target(name string) (*Target, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	t, ok := q.targets[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTarget, name)
	}
	return t, nil
}

// Name returns the name the target was registered under.
func (t *Target) Name() string { return t.name }

// run invalidates keys: MarkStale with ServeStale, else a delete that keeps
// versions (VersionKeeper, unless WithTombstoneTTL(0)), else Delete; then,
// with WaitReplicas, waits for the replicas to have it.
func (t *Target) run(ctx context.Context, keys []string) error {
	var err error
	switch {
	case t.stale != nil:
		err = t.stale.MarkStale(ctx, t.maxStale, keys...)
	case t.keeper != nil && t.q.cfg.tombstoneTTL > 0:
		err = t.keeper.DeleteKeepingVersion(ctx, t.q.cfg.tombstoneTTL, keys...)
	default:
		err = t.inv.Delete(ctx, keys...)
	}
	if err != nil || t.replicas == 0 {
		return err
	}
	return t.q.waitReplicas(ctx, t.replicas, t.waitFor)
}

// Delete invalidates keys now, once, without recording anything: the error
// is the Invalidator's.
func (t *Target) Delete(ctx context.Context, keys ...string) error {
	if err := t.check(keys); err != nil {
		return err
	}
	return t.run(ctx, keys)
}

// Invalidate invalidates keys now. If that fails, the delete is recorded in
// the queue, retried in the background with backoff and dead-lettered when
// the retry budget runs out; the error returned then wraps ErrQueued and the
// delete's error, telling the caller that the keys may stay stale for a
// while. Without ErrQueued, nothing was recorded either (Redis is likely
// down for both), or ctx ended first: the recording then goes on in the
// background, bounded by the timeout (WithTimeout), and the error also matches
// ctx's error.
func (t *Target) Invalidate(ctx context.Context, keys ...string) error {
	if err := t.check(keys); err != nil {
		return err
	}
	derr := t.run(ctx, keys)
	if derr == nil {
		return nil
	}
	// Recorded even if the caller gave up (the delete may have failed for
	// that very reason), on the queue's own deadline; Invalidate returns by
	// ctx all the same.
	e := entry{Keys: keys, Attempts: 1, Err: derr.Error()}
	late := func(err error) {
		t.q.report(t.name, keys, kind.Errorf("cacheguard: consistency: failed delete not recorded for a retry: %w", err))
	}
	if err := t.q.recordDetached(ctx, t, newID(), e, t.q.backoff(1), late); err != nil {
		return kind.Errorf("cacheguard: consistency: delete from %q failed (%w) and was not recorded for a retry: %w", t.name, derr, err)
	}
	t.q.stats.recorded.Add(1)
	return kind.Wrap(ErrQueued, "", derr)
}

// InvalidateAfter records a delete of keys due after delay. Once it returns
// nil the delete will happen, in this instance or in another one, even if
// this process dies first.
func (t *Target) InvalidateAfter(ctx context.Context, delay time.Duration, keys ...string) error {
	if err := t.check(keys); err != nil {
		return err
	}
	if delay < 0 {
		return fmt.Errorf("%w: negative delay %v", ErrInvalidArgument, delay)
	}
	if err := t.q.record(ctx, t, newID(), entry{Keys: keys}, delay); err != nil {
		return err
	}
	t.q.stats.recorded.Add(1)
	return nil
}

func (t *Target) check(keys []string) error {
	if t.q.isClosed() {
		return ErrClosed
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", ErrInvalidArgument)
	}
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: empty key", ErrInvalidArgument)
		}
	}
	return nil
}
