package bloom

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Fleet is a Bloom filter shared by every instance of a service and read in
// process: the bitmap lives in Redis (the Redis filter's layout), each
// instance tests a copy in its own memory (a Local filter's speed), and every
// Add is told to the other instances on a channel beside the bitmap
// ({N}:adds), numbered ({N}:seq) in the same script that sets the bits. Safe
// for concurrent use; Close it when done.
//
// The promise: a key whose Add returned is found by MayContain on every
// instance at most H later (H = the health check's interval + timeout,
// WithHealthCheck), whatever happens to pub/sub. An instance that cannot
// prove it has heard every add answers "maybe" for every key (safe mode:
// the read goes on as without a filter) until it has read the bitmap again:
// while its subscription is not confirmed, or is refused by the ACL; once a
// health reply is overdue (a frozen connection, a frozen process); after a
// gap or a step back in the numbers (a lost message, Redis restarted or
// flushed, a failover to a replica that missed adds); and after a rebuild
// swapped the bitmap.
//
// The subscription is one of the go-redis client's shared pub/sub
// connections (the one caches and locks use): a Fleet adds no connection
// and no goroutine of its own while nothing happens.
type Fleet struct {
	r     *Redis // the shared bitmap, the adds and the rebuilds
	local *Local // the copy MayContain reads
	cfg   config
	hub   *pubsub.Hub
	sub   *pubsub.Sub

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // rereads

	// trusted: the copy may answer "absent" (see state).
	trusted atomic.Bool
	expiry  *time.Timer // ends trust when no health reply extends it

	mu    sync.Mutex
	state fleetState

	heard, gaps, rereads, rereadErrors atomic.Uint64
}

// fleetState is what the copy can vouch for; guarded by Fleet.mu.
type fleetState struct {
	up       bool      // the subscription is confirmed in its current session
	synced   bool      // the copy holds every add up to expected-1
	until    time.Time // the last health reply vouches for messages until then
	expected uint64    // the number of the next add
	reading  bool      // a reread is under way; messages wait in pending
	again    bool      // a reread is wanted once the one under way ends
	pending  []string  // messages heard while reading
}

// FleetStats are a Fleet filter's counters and state.
type FleetStats struct {
	Heard        uint64 // add messages applied from the channel
	Gaps         uint64 // gaps or steps back in the add numbers (each a reread)
	Rereads      uint64 // bitmap reads that completed
	RereadErrors uint64 // bitmap reads that failed (tried again)
	// SafeMode is 1 while the copy cannot vouch for every add and
	// MayContain answers true for every key.
	SafeMode int64
	// FalsePositiveRate estimates how often MayContain says "maybe" for a
	// key never added, from the copy's fill (Local.FalsePositiveRate).
	FalsePositiveRate float64
}

// NewFleet opens the fleet filter called name, sized for n keys at
// false-positive rate fp, creating it in Redis if it does not exist (empty
// and not ready: fill it with Rebuild). A filter that exists with another
// size is refused with ErrMismatch. Redis being down does not fail it: the
// filter starts in safe mode and reads the bitmap once it can.
func NewFleet(ctx context.Context, rdb redis.UniversalClient, name string, n uint, fp float64, opts ...Option) (*Fleet, error) {
	r, err := newRedis(rdb, name, n, fp, partFleet, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Add(ctx); errors.Is(err, ErrMismatch) {
		return nil, err
	} else if err != nil {
		r.cfg.report.Warn("cacheguard: bloom: fleet filter starts in safe mode", err, "filter", name)
	}
	f := &Fleet{r: r, local: newLocal(r.p, n, r.p.fromBitmap(nil), r.cfg), cfg: r.cfg, hub: pubsub.Acquire(rdb)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.expiry = time.AfterFunc(time.Hour, f.expire)
	f.expiry.Stop()
	f.sub = f.hub.Subscribe(f.ctx, r.k.Adds, fleetHandler{f}, pubsub.Options{HealthInterval: r.cfg.interval, HealthTimeout: r.cfg.timeout})
	return f, nil
}

// Params returns the filter's size and number of hash functions.
func (f *Fleet) Params() Params { return f.r.p }

// Ready reports whether this instance's copy holds a complete filter (one
// that a Rebuild filled). MayContain also answers true whenever the copy
// cannot vouch for every add.
func (f *Fleet) Ready() bool { return f.local.Ready() }

// MayContain reports whether key may have been added; false is definite. It
// reads this process's copy only: no I/O, no error.
func (f *Fleet) MayContain(ctx context.Context, key string) (bool, error) {
	if !f.trusted.Load() {
		return true, nil
	}
	return f.local.MayContain(ctx, key)
}

// Add records keys in the shared bitmap and tells every instance, then sets
// them in this instance's copy. Up to one batch (WithBatchSize) is one script
// call. A key whose Add returned is found everywhere within the bound.
func (f *Fleet) Add(ctx context.Context, keys ...string) error {
	for len(keys) > 0 {
		n := min(len(keys), f.cfg.batch)
		packed := make([]byte, 0, 4*n*int(f.r.p.K))
		for _, k := range keys[:n] {
			packed = f.r.p.pack(packed, k)
		}
		if err := f.tell(ctx, wire.BloomAdded, packed); err != nil {
			return err
		}
		f.local.setOffsets(string(packed))
		keys = keys[n:]
	}
	return nil
}

// Rebuild fills the shared filter from src under the rebuild lease (one
// instance of the fleet at a time: the others get ErrRebuildInProgress),
// swaps it in, and tells every instance to read it. Call it when Ready is
// false at start (no bitmap in Redis yet) or to shed deleted rows; an
// instance that finds the bitmap ready reads it and scans nothing.
func (f *Fleet) Rebuild(ctx context.Context, src iter.Seq2[string, error]) error {
	if err := f.r.Rebuild(ctx, src); err != nil {
		return err
	}
	return f.tell(ctx, wire.BloomRebuilt, nil)
}

// WaitReady waits until this instance's copy is complete and vouches for
// every add (MayContain can answer "absent"), or ctx ends (its error). A
// service that wants the filter working before it takes traffic calls it
// after New, or after the Rebuild of a fresh filter.
func (f *Fleet) WaitReady(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !f.local.Ready() || !f.trusted.Load() {
		select {
		case <-ctx.Done():
			return kind.Errorf("cacheguard: bloom: %v not ready: %w", f, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Stats returns the filter's counters and state.
func (f *Fleet) Stats() FleetStats {
	st := FleetStats{Heard: f.heard.Load(), Gaps: f.gaps.Load(), Rereads: f.rereads.Load(),
		RereadErrors: f.rereadErrors.Load(), FalsePositiveRate: f.local.FalsePositiveRate()}
	if !f.trusted.Load() {
		st.SafeMode = 1
	}
	return st
}

// Close ends the subscription and waits for a reread under way.
func (f *Fleet) Close() error {
	f.mu.Lock() // no reread starts after this (rereadLocked checks ctx under mu)
	f.cancel()
	f.mu.Unlock()
	f.sub.Close()
	f.expiry.Stop()
	f.trusted.Store(false)
	f.wg.Wait()
	return f.hub.Release(time.Now().Add(f.cfg.timeout))
}

// fleetAddScript sets the bits of the packed offsets ARGV[4] (as addScript
// does), numbers the add and publishes it on ARGV[7] (SPUBLISH when ARGV[6]
// is 1: a cluster's shard channel, in the filter's slot): "<seq> <kind
// ARGV[5]> <offsets>" (wire.ParseBloomAdds). It replies the ready flag.
//
// KEYS: cfg, bits, delta, build, seq. ARGV: params, m, k, packed offsets,
// kind, sharded, channel.
var fleetAddScript = redis.NewScript(checkLua + createLua + offsetLua + setBitsLua + `
local seq = redis.call('INCR', KEYS[5])
local publish = 'PUBLISH'
if ARGV[6] == '1' then publish = 'SPUBLISH' end
redis.call(publish, ARGV[7], seq .. ' ' .. ARGV[5] .. ' ' .. ARGV[4])
if ready then return 1 end
return 0
`)

// tell runs fleetAddScript for packed offsets of kind.
func (f *Fleet) tell(ctx context.Context, kind string, packed []byte) error {
	k := f.r.k
	sharded := "0"
	if f.hub.Sharded() {
		sharded = "1"
	}
	v, err := fleetAddScript.Run(ctx, f.r.rdb, []string{k.Cfg, k.Bits, k.Delta, k.Build, k.Seq},
		f.r.args(packed, kind, sharded, k.Adds)...).Int64()
	if err != nil {
		return f.r.wrap(err)
	}
	f.r.ready.Store(v == 1)
	return nil
}

// String names the filter in messages.
func (f *Fleet) String() string { return fmt.Sprintf("fleet filter %q", f.r.name) }

// FillRatio is the share of set bits in this instance's copy (what
// otel.RegisterBloom exports); the false-positive rate is about this to the
// power k (FleetStats.FalsePositiveRate).
func (f *Fleet) FillRatio(ctx context.Context) (float64, error) { return f.local.FillRatio(ctx) }
