// Package flight coalesces the Redis reads of one key in one process.
package flight

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// Read coalescing, and the rule for sharing. Concurrent Gets (and GetMany
// calls) of one key in this process share one flight: one GET, and on a
// miss one lease attempt and one fill, whose result every caller takes.
//
// A caller joins only a read that is not sent yet. Once the leader sends
// its GET the flight is closed; a caller that comes later starts the next
// flight, which waits for the one under way to finish and then reads on its
// own. So every caller of a flight started before its read, and whatever
// the read (or the fill that follows it) answers is at least as new as
// each caller's start, whichever instance wrote meanwhile: no write needs
// to reach this process for that. A key has at most one read and one fill
// under way here, and a stampede of N callers costs two reads, not N.
// The local tier admits with the clock taken when the read is sent, so an
// invalidation that arrives during the read keeps it out.
//
// Most reads have nobody to share with, and a flight (an allocation, and
// two more turns of the shard's lock) would be pure cost for them. So a Get
// that finds no flight and no solo read of its key reads "solo", without a
// flight: it marks its key in the shard's solo reads with the clock (held
// by value, no allocation; any number of keys of a shard may be read solo
// at once). A caller of the same key that arrives meanwhile makes
// a flight standing for the solo read (the solo reader finishes it, or on a
// miss leads its fill) and queues the next flight behind it.
//
// The caller that starts a flight (its leader) reads on its own context, so a
// Redis hit costs no goroutine; if that context ends before the read
// finishes, the flight ends "gone" and every other caller joins or starts a
// new one. A fill, once started, runs detached (the engine's shared fill) and ends the
// flight itself.

// Flight is one shared read of a key. Its fields other than joined are
// guarded by its shard's lock; once finished is set, res no longer changes.
// A flight is joinable until its read is sent; its clock is taken then.
type Flight[V any] struct {
	sh  *Shard[V]
	key string // the rkey it stands for, fixed when it is made (the generation may move on)
	// prev is the key's read that was already sent when this flight was
	// made: the leader waits for it to finish before sending its own, so
	// that one key has at most one read (and one fill) under way here.
	prev     *Flight[V]
	clock    local.Clock  // taken when the read is sent
	Joined   atomic.Int32 // callers other than the leader
	sent     bool         // the read went out: nobody joins any more
	finished bool
	res      Result[V]
	// done is made only when a caller has to wait (most Redis hits finish
	// before anyone asks, and then cost no channel); closed at finish.
	done chan struct{}
	// passed: a write of this instance came after the read was sent, so
	// the next read need not wait for it (pass is closed then, if made).
	passed bool
	pass   chan struct{}
}

// Result is what a flight hands every caller.
type Result[V any] struct {
	R    entry.Result[V]
	Tier telemetry.Tier // TierRedis: a hit; TierFill: a fill
	Err  error          // as Get would return it before its unavailable policy
	// Gone: the caller running the read stopped before it had an answer
	// (its context ended, or a GetMany left the key undecided); join again.
	Gone bool
}

// Table is the table of flights under way, by prefixed key, in shards so
// that reads of different keys do not queue on one lock.
type Table[V any] struct {
	shards [flightShards]Shard[V]
}

const flightShards = 16

type Shard[V any] struct {
	mu sync.Mutex
	m  map[string]*Flight[V]
	// The shard's solo reads under way (see above): one in solo, the
	// usual case, which costs no map operation; the others in more, by
	// prefixed key.
	solo soloRead[V]
	more map[string]soloRead[V]
	_    [64]byte // keeps neighbouring shards' locks off one cache line
}

// soloRead is a read of one key without a flight.
type soloRead[V any] struct {
	key   string      // the prefixed key read ("" in a free solo slot)
	clock local.Clock // taken before the read
	// flight stands for the read once a caller queued behind it.
	flight *Flight[V]
	// passed: a write of the key came after the read was sent, so later
	// callers do not queue behind it (forget).
	passed bool
}

func (fs *Table[V]) shard(rkey string) *Shard[V] {
	return &fs.shards[local.Hash(rkey)%flightShards]
}

// Join returns the flight for rkey that callers may still join: one whose
// read is not sent yet. If there is none it starts one (lead is then true),
// queued behind the read of rkey under way, if any (f.prev).
func (fs *Table[V]) Join(rkey string) (f *Flight[V], lead bool) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	prev := sh.m[rkey]
	if prev != nil && !prev.sent {
		return prev, false
	}
	if s, ok := sh.soloOf(rkey); prev == nil && ok && !s.passed {
		// The key is being read solo: a flight stands for that read,
		// and the solo reader finishes it (or leads its fill).
		if s.flight == nil {
			s.flight = &Flight[V]{sh: sh, key: rkey, clock: s.clock, sent: true}
			sh.setSolo(s)
		}
		prev = s.flight
	}
	f = &Flight[V]{sh: sh, key: rkey, prev: prev}
	if sh.m == nil {
		sh.m = make(map[string]*Flight[V])
	}
	sh.m[rkey] = f
	return f, true
}

// Send is the leader's, before its read: it waits for the key's previous
// read to finish, then closes f to joiners and takes the clock. An error
// is ctx's: the leader gave up before reading.
func (f *Flight[V]) Send(ctx context.Context, clock func() local.Clock) error {
	if p := f.prev; p != nil {
		if err := p.awaitPassed(ctx); err != nil {
			return err
		}
	}
	f.sh.mu.Lock()
	f.sent, f.prev, f.clock = true, nil, clock()
	f.sh.mu.Unlock()
	return nil
}

// StartSolo marks rkey as read solo in its shard, if no flight and no solo
// read of rkey is under way, and returns the clock taken before the read.
func (fs *Table[V]) StartSolo(rkey string, clock func() local.Clock) (*Shard[V], local.Clock, bool) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.m) > 0 && sh.m[rkey] != nil {
		return nil, local.Clock{}, false
	}
	if _, ok := sh.soloOf(rkey); ok {
		return nil, local.Clock{}, false
	}
	now := clock()
	sh.setSolo(soloRead[V]{key: rkey, clock: now})
	return sh, now, true
}

// soloOf returns the solo read of rkey under way, if any. The shard's lock
// is held, as for setSolo and dropSolo.
func (sh *Shard[V]) soloOf(rkey string) (soloRead[V], bool) {
	if sh.solo.key == rkey {
		return sh.solo, true
	}
	s, ok := sh.more[rkey]
	return s, ok
}

// setSolo records s, a solo read of s.key, or updates it where it is.
func (sh *Shard[V]) setSolo(s soloRead[V]) {
	if _, inMore := sh.more[s.key]; sh.solo.key == s.key || (!inMore && sh.solo.key == "") {
		sh.solo = s
		return
	}
	if sh.more == nil {
		sh.more = make(map[string]soloRead[V])
	}
	sh.more[s.key] = s
}

// dropSolo removes the solo read of rkey.
func (sh *Shard[V]) dropSolo(rkey string) {
	if sh.solo.key == rkey {
		sh.solo = soloRead[V]{}
		return
	}
	delete(sh.more, rkey)
}

// EndSolo ends the shard's solo read of rkey. f is the flight that stands
// for it: the one made when a caller queued behind the read, which the
// solo reader finishes, or on a miss one made now for the fill, so that
// callers that come during the fill queue behind it. f is nil after a hit
// nobody queued behind.
func (sh *Shard[V]) EndSolo(rkey string, miss bool) (f *Flight[V]) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s, _ := sh.soloOf(rkey)
	sh.dropSolo(rkey)
	if f = s.flight; f != nil || !miss {
		return f
	}
	f = &Flight[V]{sh: sh, key: rkey, clock: s.clock, sent: true}
	if sh.m[rkey] == nil { // else a read started after a write passed this one
		if sh.m == nil {
			sh.m = make(map[string]*Flight[V])
		}
		sh.m[rkey] = f
	}
	return f
}

// Finish hands res to f's callers and takes f out of the table. A flight
// that ends before its read was sent gives the key back to the read it was
// queued behind. Only the first finish counts.
func (fs *Table[V]) Finish(f *Flight[V], res Result[V]) {
	sh, rkey := f.sh, f.key
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if f.finished {
		return
	}
	if sh.m[rkey] == f {
		if p := f.prev; p != nil && !p.finished && !f.sent {
			sh.m[rkey] = p
		} else {
			delete(sh.m, rkey)
		}
	}
	f.res, f.finished = res, true
	if f.done != nil {
		close(f.done)
	}
}

// awaitPassed waits until f finishes or a write passes it, or ctx ends.
func (f *Flight[V]) awaitPassed(ctx context.Context) error {
	f.sh.mu.Lock()
	if f.finished || f.passed {
		f.sh.mu.Unlock()
		return nil
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	if f.pass == nil {
		f.pass = make(chan struct{})
	}
	done, pass := f.done, f.pass
	f.sh.mu.Unlock()
	select {
	case <-done:
	case <-pass:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Forget is called after a write of rkey by this instance: the read of rkey
// under way, sent before the write, is passed, so that callers that come
// after the write do not wait for it (it shares nothing with them anyway:
// its fill is refused, or its answer was read before the write).
func (fs *Table[V]) Forget(rkey string) {
	sh := fs.shard(rkey)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s, ok := sh.soloOf(rkey); ok && !s.passed {
		s.passed = true // later callers do not queue behind the solo read
		sh.setSolo(s)
		if s.flight != nil {
			s.flight.passBy()
		}
	}
	f := sh.m[rkey]
	switch {
	case f == nil:
		return
	case f.sent:
		delete(sh.m, rkey)
	case f.prev != nil:
		f = f.prev
	default:
		return
	}
	f.passBy()
}

// passBy marks f passed by a write; its shard's lock is held.
func (f *Flight[V]) passBy() {
	if !f.passed {
		f.passed = true
		if f.pass != nil {
			close(f.pass)
		}
	}
}

// Wait waits for f or ctx.
func (f *Flight[V]) Wait(ctx context.Context) (Result[V], error) {
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
		return Result[V]{}, ctx.Err()
	}
}

// Prev reports whether f is queued behind a read of its key under way.
func (f *Flight[V]) Prev() bool { return f.prev != nil }

// Clock is the tier's clock taken when f's read was sent.
func (f *Flight[V]) Clock() local.Clock { return f.clock }

// Busy describes the shards that hold a flight or a solo read (none: the
// table is idle), for tests.
func (fs *Table[V]) Busy() []string {
	var out []string
	for i := range fs.shards {
		sh := &fs.shards[i]
		sh.mu.Lock()
		n, solo, more := len(sh.m), sh.solo.key, len(sh.more)
		sh.mu.Unlock()
		if n > 0 || solo != "" || more > 0 {
			out = append(out, fmt.Sprintf("shard %d not idle: %d flights, solo read %q, %d more", i, n, solo, more))
		}
	}
	return out
}
