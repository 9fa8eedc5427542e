package lincheck

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// row is the value cached: the key it belongs to and the row's version.
type row struct {
	K string `json:"k"`
	V uint64 `json:"v"`
}

// writeKind is the cache call a write makes after updating the row.
type writeKind int

const (
	wDelete writeKind = iota
	wDeleteKeepingVersion
	wSetVersioned
	wSet
)

func (k writeKind) String() string {
	return [...]string{"Delete", "DeleteKeepingVersion", "SetVersioned", "Set"}[k]
}

// mayFollow reports whether a write of kind k may begin (and take the next,
// higher version) while a write of kind earlier is still making its cache
// call. A delete removes whatever it finds, so anything may follow it; a
// versioned set may follow a versioned set (the higher version wins either
// way). Anything else may let the earlier call land last and leave its older
// row cached, by the API's contract: a Set, or a SetVersioned after a plain
// or version-keeping delete that carries no version of its own.
func (k writeKind) mayFollow(earlier writeKind) bool {
	switch earlier {
	case wDelete, wDeleteKeepingVersion:
		return true
	case wSetVersioned:
		return k == wSetVersioned
	}
	return false
}

// dbRow is a row of the database. Version 0 is the initial state: present
// (at version 0) for keys whose index is odd, absent for the others.
type dbRow struct {
	ver        uint64
	present    bool
	initAbsent bool
	// writers counts the writes of each kind making their cache call.
	writers [wSet + 1]int
	// next is closed when the next write of the row returns (gated loads
	// wait on it).
	next chan struct{}
}

// db is the source of truth: a mutex-guarded map of rows with versions, and
// loaders that are slow at random.
type db struct {
	mu     sync.Mutex
	cond   *sync.Cond
	rows   map[string]*dbRow
	slow   time.Duration // a load takes up to this long
	gateP  float64       // probability that a load waits for the row's next write
	gateTO time.Duration // a gated load waits at most this long
}

func newDB(keys []string) *db {
	d := &db{rows: make(map[string]*dbRow), slow: 20 * time.Millisecond, gateP: 0.15, gateTO: 100 * time.Millisecond}
	d.cond = sync.NewCond(&d.mu)
	for i, k := range keys {
		d.rows[k] = &dbRow{present: i%2 == 1, initAbsent: i%2 == 0, next: make(chan struct{})}
	}
	return d
}

// initiallyAbsent reports whether key has no row at version 0.
func (d *db) initiallyAbsent(key string) bool { return d.rows[key].initAbsent } // never written

// begin waits until a write of kind may run on key, then updates the row
// (a new version, present) and returns that version and the time now gave
// just before the update. end must follow.
func (d *db) begin(key string, kind writeKind, now func() int64) (uint64, int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.rows[key]
	for !r.mayBegin(kind) {
		d.cond.Wait()
	}
	r.writers[kind]++
	call := now()
	r.ver++
	r.present = true
	return r.ver, call
}

// mayBegin reports whether a write of kind may follow every write in flight.
func (r *dbRow) mayBegin(kind writeKind) bool {
	for earlier, n := range r.writers {
		if n > 0 && !kind.mayFollow(writeKind(earlier)) {
			return false
		}
	}
	return true
}

// end marks the end of a write of key (its cache call returned, or gave up):
// gated loads of key go on and other writers may start.
func (d *db) end(key string, kind writeKind) {
	d.mu.Lock()
	r := d.rows[key]
	r.writers[kind]--
	close(r.next)
	r.next = make(chan struct{})
	d.mu.Unlock()
	d.cond.Broadcast()
}

// read returns the row as it is now and the channel closed by its next write.
func (d *db) read(key string) (row, bool, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.rows[key]
	return row{K: key, V: r.ver}, r.present, r.next
}

// pause sleeps up to d.slow at random, or until ctx ends.
func (d *db) pause(ctx context.Context, rng *rand.Rand) {
	t := time.NewTimer(time.Duration(rng.Int64N(int64(d.slow) + 1)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// loadOne reads key between two random pauses; with probability gateP it
// then holds what it read until the row's next write returns (or gateTO),
// so that the value it returns is older than that write.
func (d *db) loadOne(ctx context.Context, rng *rand.Rand, key string) (row, bool) {
	d.pause(ctx, rng)
	r, ok, next := d.read(key)
	if rng.Float64() < d.gateP {
		t := time.NewTimer(d.gateTO)
		select {
		case <-next:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	} else {
		d.pause(ctx, rng)
	}
	return r, ok
}

// loader returns a cache.Loader on the database, drawing its delays from
// rng (guarded, since loads run on the cache's goroutines).
func (d *db) loader(rng *lockedRand) cache.Loader[row] {
	return func(ctx context.Context, key string) (row, error) {
		r, ok := d.loadOne(ctx, rng.get(), key)
		if !ok {
			return row{}, cache.ErrNotFound
		}
		return r, nil
	}
}

// batchLoader is loader for GetMany: each key is read at its own moment.
func (d *db) batchLoader(rng *lockedRand) cache.BatchLoader[row] {
	return func(ctx context.Context, keys []string) (map[string]row, error) {
		out := make(map[string]row, len(keys))
		r := rng.get()
		for _, k := range keys {
			if v, ok := d.loadOne(ctx, r, k); ok {
				out[k] = v
			}
		}
		return out, nil
	}
}

// lockedRand hands out independent generators seeded from one, so that a
// seed fixes every choice while loads run concurrently.
type lockedRand struct {
	mu  sync.Mutex
	src *rand.Rand
}

func (l *lockedRand) get() *rand.Rand {
	l.mu.Lock()
	defer l.mu.Unlock()
	return rand.New(rand.NewPCG(l.src.Uint64(), l.src.Uint64()))
}
