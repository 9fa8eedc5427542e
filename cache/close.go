package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/script"
)

// Shutting down. A process that stops while it holds fill leases (a rolling
// deploy) must not leave them in Redis: every other process would wait them
// out. So Close cancels what runs here, lets the cancelled fills release
// their own leases, waits for them (bounded by WithCloseTimeout), then
// releases any lease still held by a loader that ignored its cancellation:
// that loader's fill, when it returns, finds its placeholder gone and is
// refused like any stale fill.

// releaseTimeout bounds a lease release. Releases run on a context detached
// from the call that took the lease, since they matter most when that call
// was cancelled.
const releaseTimeout = time.Second

// Close stops background work (shared fills, detached loads, early refreshes,
// the invalidation subscriber) and GetMany calls in flight, releases the fill
// leases this Cache holds, and waits for its goroutines (Redis calls left
// running at a caller's deadline included), for at most the
// close timeout (WithCloseTimeout, default 5 s). If a loader ignores its
// cancellation past that, Close releases its lease anyway and returns an
// error wrapping context.DeadlineExceeded. It does not close the Redis
// client, which the caller owns. Calls after Close return ErrClosed; Close
// may race any call.
func (c *Cache[V]) Close() error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.closed.Store(true)
	c.mu.Unlock()
	c.close()
	_ = c.closeSync() // a sync waiting on a frozen node ends now
	deadline := time.Now().Add(c.cfg.closeTimeout)
	finished := make(chan struct{})
	go func() {
		c.bg.Wait()
		close(finished)
	}()
	t := time.NewTimer(c.cfg.closeTimeout)
	defer t.Stop()
	var err error
	select {
	case <-finished:
	case <-t.C:
		err = fmt.Errorf("cacheguard: cache: close: loads still running after %v: %w", c.cfg.closeTimeout, context.DeadlineExceeded)
	}
	c.releaseHeld()
	// Calls left running at their deadline end by the client's own
	// timeouts; none of their goroutines outlives Close. A batch of queued
	// commands that a plain command ending from now on would start runs on
	// that command's caller's goroutine (sendBatches).
	c.flight.Stop()
	if !c.flight.Wait(time.Until(deadline)) && err == nil {
		err = fmt.Errorf("cacheguard: cache: close: Redis calls still running after %v: %w", c.cfg.closeTimeout, context.DeadlineExceeded)
	}
	c.track.close()
	c.invalSub.Close()
	c.fills.close()
	if herr := c.hub.Release(deadline); herr != nil && err == nil {
		err = fmt.Errorf("cacheguard: cache: close: %w", herr)
	}
	if c.local != nil {
		c.local.Close()
	}
	c.logs.flush() // the counts of repeated errors not logged yet
	return err
}

// goBackground runs fn in a goroutine that Close waits for; it returns false
// (and runs nothing) once the cache is closed.
func (c *Cache[V]) goBackground(fn func()) bool {
	leave, ok := c.enter()
	if !ok {
		return false
	}
	go func() {
		defer leave()
		fn()
	}()
	return true
}

// enter registers work that Close waits for; ok is false once the cache is
// closed.
func (c *Cache[V]) enter() (leave func(), ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return nil, false
	}
	c.bg.Add(1)
	return c.bg.Done, true
}

// untilClosed returns ctx, also cancelled by Close.
func (c *Cache[V]) untilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// detached runs fn for work that outlives the call that started it (a
// shared fill, a GetMany's fill, a fallback load, an early refresh): on
// ctx detached from its cancellation (its values kept) and cancelled by
// Close, with a panic of fn (a codec's, say) returned as an error,
// "cacheguard: cache: <what> of <subject> panicked: ...", and T's zero value: on
// a background goroutine nobody could recover it. The goroutine, counted
// for Close (goBackground), is the caller's.
func detached[T, V any](c *Cache[V], ctx context.Context, what string, subject any, fn func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("cacheguard: cache: %s of %q panicked: %v", what, subject, p)
		}
	}()
	ctx, cancel := c.untilClosed(context.WithoutCancel(ctx))
	defer cancel()
	return fn(ctx)
}

// hold and unhold keep the registry of leases Close must release.
func (c *Cache[V]) hold(ls ...lease) {
	for _, l := range ls {
		c.held.Store(l, struct{}{})
	}
}

func (c *Cache[V]) unhold(ls ...lease) {
	for _, l := range ls {
		c.held.Delete(l)
	}
}

// releaseHeld releases every lease still registered, in one pipeline.
func (c *Cache[V]) releaseHeld() {
	var ls []lease
	c.held.Range(func(k, _ any) bool {
		ls = append(ls, k.(lease))
		return true
	})
	if len(ls) > 0 {
		c.releaseLeases(context.Background(), ls)
	}
}

// releaseLeases deletes the leases' placeholders where they are still ours,
// on a context detached from ctx (keeping its values) with its own timeout,
// so that whatever ended the call that took them, they do not stay behind.
func (c *Cache[V]) releaseLeases(ctx context.Context, ls []lease) {
	if len(ls) == 0 {
		return
	}
	err := call.Err(c.calls.Strict(), context.WithoutCancel(ctx), releaseTimeout, func(ctx context.Context) error {
		if len(ls) == 1 {
			return ls[0].release(ctx, c.rdb)
		}
		calls := make([]script.Call, len(ls))
		for i, l := range ls {
			calls[i] = script.Call{Script: releaseScript, Keys: []string{l.key}, Args: l.releaseArgs()}
		}
		_, err := script.Run(ctx, c.rdb, calls)
		return err
	})
	if err != nil {
		c.report(logLeaseRelease, ls[0].key, c.redisError(ls[0].key, "release lease", err))
	}
}
