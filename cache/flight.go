package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Read coalescing. All concurrent Gets (and GetMany calls) of one key in this
// process share one flight: one GET, and on a miss one lease attempt and one
// fill, whose result every caller takes. Without it, N callers of an absent
// key cost N GETs and N SET NX GETs even though singleflight shares the load.
//
// A flight is found by the prefixed key. Set, Delete, MarkStale, versioned
// writes and invalidations from other instances remove it from the table
// (forget), so a call that starts after a write starts a flight of its own
// and never takes a value read or loaded before the write. Admission to the
// local tier uses the clock taken when the flight started, before its read,
// so an invalidation that arrives during the read keeps it out for every
// caller.
//
// The caller that starts a flight (its leader) reads on its own context, so a
// Redis hit costs no goroutine; if that context ends before the read
// finishes, the flight ends "gone" and every other caller joins or starts a
// new one. A fill, once started, runs detached (see sharedFill) and ends the
// flight itself.

// flight is one shared read of a key.
type flight[V any] struct {
	done   chan struct{} // closed once res is set
	clock  localClock    // taken before the read
	joined atomic.Int32  // callers other than the leader
	res    flightResult[V]
}

// flightResult is what a flight hands every caller.
type flightResult[V any] struct {
	r    result[V]
	tier Tier  // TierRedis: a hit; TierFill: a fill
	err  error // as Get would return it before its unavailable policy
	// gone: the caller running the read stopped before it had an answer
	// (its context ended, or a GetMany left the key undecided); join again.
	gone bool
}

// flights is the table of flights under way, by prefixed key.
type flights[V any] struct {
	mu sync.Mutex
	m  map[string]*flight[V]
}

// join returns the flight for rkey, starting one (lead is then true) if none
// is under way.
func (fs *flights[V]) join(rkey string, clock func() localClock) (f *flight[V], lead bool) {
	fs.mu.Lock()
	if f = fs.m[rkey]; f != nil {
		fs.mu.Unlock()
		return f, false
	}
	f = &flight[V]{done: make(chan struct{}), clock: clock()}
	if fs.m == nil {
		fs.m = make(map[string]*flight[V])
	}
	fs.m[rkey] = f
	fs.mu.Unlock()
	return f, true
}

// finish hands res to f's callers and takes f out of the table (unless a
// write already replaced it there). Only the first finish counts.
func (fs *flights[V]) finish(rkey string, f *flight[V], res flightResult[V]) {
	fs.mu.Lock()
	select {
	case <-f.done:
		fs.mu.Unlock()
		return
	default:
	}
	if fs.m[rkey] == f {
		delete(fs.m, rkey)
	}
	f.res = res
	close(f.done)
	fs.mu.Unlock()
}

// forget takes rkey's flight out of the table: callers that come after a
// write must not join a read that started before it.
func (fs *flights[V]) forget(rkey string) {
	fs.mu.Lock()
	delete(fs.m, rkey)
	fs.mu.Unlock()
}

// wait waits for f or ctx.
func (f *flight[V]) wait(ctx context.Context) (flightResult[V], error) {
	select {
	case <-f.done:
		return f.res, nil
	case <-ctx.Done():
		return flightResult[V]{}, ctx.Err()
	}
}

// isCtxErr reports a context's own error (the caller gave up; nothing failed).
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
