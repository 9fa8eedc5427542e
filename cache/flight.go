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
// Most reads have nobody to share with, and a flight (an allocation, a map
// insert and delete) would be pure cost for them. So a Get that finds no
// flight of its key and no other such read in its shard reads "solo",
// without a flight: it marks the shard with its key and the clock, and a
// caller of the same key that arrives meanwhile makes the flight and adopts
// the read (the solo reader then finishes that flight, or, on a miss, leads
// its fill). Coalescing is unchanged: still one read per key at a time. A
// write that forgets the key also unmarks the solo read, so that nobody
// adopts it after the write.
//
// The caller that starts a flight (its leader) reads on its own context, so a
// Redis hit costs no goroutine; if that context ends before the read
// finishes, the flight ends "gone" and every other caller joins or starts a
// new one. A fill, once started, runs detached (see sharedFill) and ends the
// flight itself.

// flight is one shared read of a key. Its fields other than clock and joined
// are guarded by its shard's lock until finished is set; after that res no
// longer changes.
type flight[V any] struct {
	sh       *flightShard[V]
	clock    localClock   // taken before the read
	joined   atomic.Int32 // callers other than the leader
	finished bool
	res      flightResult[V]
	// done is made only when a caller has to wait (most Redis hits finish
	// before anyone asks, and then cost no channel); closed at finish.
	done chan struct{}
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

// flights is the table of flights under way, by prefixed key, in shards so
// that reads of different keys do not queue on one lock.
type flights[V any] struct {
	shards [flightShards]flightShard[V]
}

const flightShards = 16

type flightShard[V any] struct {
	mu sync.Mutex
	m  map[string]*flight[V]
	// The shard's solo read, if any (see above): soloKey is "" once a
	// write has forgotten it; soloFlight is the flight a caller made to
	// adopt it.
	solo       bool
	soloKey    string
	soloClock  localClock
	soloFlight *flight[V]
	_          [64]byte // keeps neighbouring shards' locks off one cache line
}

func (fs *flights[V]) shard(rkey string) *flightShard[V] {
	return &fs.shards[fnv1a(rkey)%flightShards]
}

// fnv1a hashes s (FNV-1a, 32 bits) to spread keys over lock stripes.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// join returns the flight for rkey, starting one (lead is then true) if none
// is under way.
func (fs *flights[V]) join(rkey string, clock func() localClock) (f *flight[V], lead bool) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f = sh.m[rkey]; f != nil {
		return f, false
	}
	if sh.solo && sh.soloKey == rkey {
		// The key is being read solo: make its flight and wait for the
		// solo reader to finish it.
		f = sh.add(rkey, sh.soloClock)
		sh.soloFlight = f
		return f, false
	}
	return sh.add(rkey, clock()), true
}

// add puts a new flight for rkey in the table; sh.mu is held.
func (sh *flightShard[V]) add(rkey string, clock localClock) *flight[V] {
	f := &flight[V]{sh: sh, clock: clock}
	if sh.m == nil {
		sh.m = make(map[string]*flight[V])
	}
	sh.m[rkey] = f
	return f
}

// startSolo marks rkey as read solo in its shard, if no flight of rkey and
// no other solo read of the shard is under way, and returns the clock taken
// before the read.
func (fs *flights[V]) startSolo(rkey string, clock func() localClock) (*flightShard[V], localClock, bool) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.solo || (len(sh.m) > 0 && sh.m[rkey] != nil) {
		return nil, localClock{}, false
	}
	sh.solo, sh.soloKey, sh.soloClock = true, rkey, clock()
	return sh, sh.soloClock, true
}

// endSolo ends the shard's solo read of rkey. f is the flight that callers
// who arrived meanwhile wait on (nil if none did): the solo reader finishes
// it, or on a miss leads its fill. On a miss without such a flight, endSolo
// makes one for the fill (lead), or returns the flight a later caller
// started (a write forgot the solo read: it is not filled from), or nil
// when the read must start over for the same reason.
func (sh *flightShard[V]) endSolo(rkey string, miss bool) (f *flight[V], lead bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	f, forgotten := sh.soloFlight, sh.soloKey != rkey
	sh.solo, sh.soloKey, sh.soloFlight = false, "", nil
	switch {
	case f != nil:
		return f, true
	case !miss || forgotten:
		return nil, false
	}
	if f = sh.m[rkey]; f != nil {
		return f, false
	}
	return sh.add(rkey, sh.soloClock), true
}

// finish hands res to f's callers and takes f out of the table (unless a
// write already replaced it there). Only the first finish counts.
func (fs *flights[V]) finish(rkey string, f *flight[V], res flightResult[V]) {
	sh := f.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f.finished {
		return
	}
	if sh.m[rkey] == f {
		delete(sh.m, rkey)
	}
	f.res, f.finished = res, true
	if f.done != nil {
		close(f.done)
	}
}

// forget takes rkey's flight out of the table: callers that come after a
// write must not join a read that started before it.
func (fs *flights[V]) forget(rkey string) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	delete(sh.m, rkey)
	if sh.soloKey == rkey {
		sh.soloKey = "" // nobody joins the solo read from now on
	}
	sh.mu.Unlock()
}

// wait waits for f or ctx.
func (f *flight[V]) wait(ctx context.Context) (flightResult[V], error) {
	f.sh.mu.Lock()
	if f.finished {
		res := f.res
		f.sh.mu.Unlock()
		return res, nil
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	done := f.done
	f.sh.mu.Unlock()
	select {
	case <-done:
		return f.res, nil // written before done was closed
	case <-ctx.Done():
		return flightResult[V]{}, ctx.Err()
	}
}

// isCtxErr reports a context's own error (the caller gave up; nothing failed).
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
