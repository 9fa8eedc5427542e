// Package life is a cache's lifetime: the work that runs detached from
// the calls that started it (shared fills, refreshes, fallback loads, the
// background loops) and that Close cancels and waits for. Nothing starts
// once Close has begun, and nothing started before it outlives it.
package life

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
)

// Group is the background work of one cache. Make it with New.
type Group struct {
	// closing is cancelled by Close; detached work derives from it so
	// that none outlives Close.
	closing context.Context
	cancel  context.CancelFunc
	bg      sync.WaitGroup
	mu      sync.RWMutex // orders bg.Add against Close's bg.Wait
	closed  atomic.Bool
}

// New returns a Group with no work.
func New() *Group {
	g := &Group{}
	g.closing, g.cancel = context.WithCancel(context.Background())
	return g
}

// Closing is cancelled when Close begins.
func (g *Group) Closing() context.Context { return g.closing }

// Closed reports whether Close has begun.
func (g *Group) Closed() bool { return g.closed.Load() }

// Close marks the group closed and cancels its work; it reports false if
// it was closed already. Wait then waits for the work.
func (g *Group) Close() bool {
	g.mu.Lock()
	if g.closed.Load() {
		g.mu.Unlock()
		return false
	}
	g.closed.Store(true)
	g.mu.Unlock()
	g.cancel()
	return true
}

// Wait waits for the group's work, at most d; false if some was still
// running then.
func (g *Group) Wait(d time.Duration) bool {
	finished := make(chan struct{})
	go func() {
		g.bg.Wait()
		close(finished)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-finished:
		return true
	case <-t.C:
		return false
	}
}

// Check says whether a call about key may start: the key is one a caller
// may use (errs.CheckKey), the group is not closed (ErrClosed), and ctx has
// not ended (its error).
func (g *Group) Check(ctx context.Context, key string) error {
	if err := errs.CheckKey(key); err != nil {
		return err
	}
	if g.Closed() {
		return errs.ErrClosed
	}
	return ctx.Err()
}

// Go runs fn in a goroutine that Wait waits for; it returns false (and
// runs nothing) once the group is closed.
func (g *Group) Go(fn func()) bool {
	leave, ok := g.Enter()
	if !ok {
		return false
	}
	go func() {
		defer leave()
		fn()
	}()
	return true
}

// Enter registers work that Wait waits for; ok is false once the group is
// closed.
func (g *Group) Enter() (leave func(), ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return nil, false
	}
	g.bg.Add(1)
	return g.bg.Done, true
}

// UntilClosed returns ctx, also cancelled by Close.
func (g *Group) UntilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(g.closing, cancel)
	return ctx, func() { stop(); cancel() }
}

// Detached runs fn for work that outlives the call that started it (a
// shared fill, a GetMany's fill, a fallback load, an early refresh): on ctx
// detached from its cancellation (its values kept) and cancelled by Close,
// with a panic of fn (a codec's, say) returned as an error, "cacheguard:
// cache: <what> of <subject> panicked: ...", and T's zero value: on a
// background goroutine nobody could recover it. The goroutine, counted for
// Close (Go), is the caller's.
func Detached[T any](g *Group, ctx context.Context, what string, subject any, fn func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("cacheguard: cache: %s of %q panicked: %v", what, subject, p)
		}
	}()
	ctx, cancel := g.UntilClosed(context.WithoutCancel(ctx))
	defer cancel()
	return fn(ctx)
}
