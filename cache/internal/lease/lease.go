package lease

import (
	"bytes"
	"context"
	"crypto/rand"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Lease is a held fill lease.
type Lease struct {
	Key    string // the Redis key
	ph     string // our placeholder
	notify target
}

// Placeholder is the lease's placeholder.
func (l Lease) Placeholder() string { return l.ph }

// Leases takes and keeps the leases of one cache. Make it with New.
type Leases struct {
	// id begins every token this cache's leases carry (Own).
	id    [wire.TokenSize / 2]byte
	ttl   time.Duration
	redis *transport.Redis
	rec   *telemetry.Recorder
	hooks *hook.Set
	fills *listener // wakes waiters when a fill lands (notify.go)
}

// New returns the leases, of ttl each, of a cache.
func New(ttl time.Duration, r *transport.Redis, hub *pubsub.Hub, g *life.Group, rec *telemetry.Recorder, hooks *hook.Set) *Leases {
	ls := &Leases{ttl: ttl, redis: r, rec: rec, hooks: hooks,
		fills: &listener{rdb: r.Client(), hub: hub, closing: g.Closing(), ttl: ttl, hooks: hooks}}
	rand.Read(ls.id[:]) // never fails (crypto/rand)
	return ls
}

// TTL is a lease's length.
func (ls *Leases) TTL() time.Duration { return ls.ttl }

// Close unsubscribes every fill channel.
func (ls *Leases) Close() { ls.fills.close() }

// New returns a lease on rkey, not taken yet, whose fill publishes on rkey's
// fill channel.
func (ls *Leases) New(rkey string) Lease {
	var tok [wire.TokenSize]byte
	n := copy(tok[:], ls.id[:])
	rand.Read(tok[n:]) // never fails (crypto/rand)
	return Lease{Key: rkey, ph: wire.Placeholder(tok), notify: ls.fills.target(rkey)}
}

// Own reports a placeholder that one of this cache's leases wrote. One that
// none of the cache's fills holds (the read engine keeps the leases its
// fills hold) is held by nobody: it is what a failover leaves when Redis
// keeps a lease and loses the fill that replaced it (replication is
// asynchronous: the promoted replica got the SET NX, not the fill the
// demoted master acknowledged after), or a SET NX whose reply was lost and
// that go-redis sent again. Waiting for it would block the key's readers
// until it expires, so the fill takes it over at once, as it takes over
// foreign bytes (SwapScript keeps the version a placeholder kept).
func (ls *Leases) Own(prev []byte) bool {
	p, ok := wire.ParsePlaceholder(prev)
	return ok && bytes.HasPrefix(p.Base[wire.PlaceholderSize-wire.TokenSize:], ls.id[:])
}

// Acquire sends the attempts of leases, SET key placeholder NX GET PX ttl,
// putting each reply in acq; it returns the first error, as Pipelined
// does. A lone attempt (a Get's) goes through the queue of its key's node
// (internal/transport), sharing a round trip with the other single-key
// commands under way there; several (a GetMany's) go in a pipeline of
// their own.
func (ls *Leases) Acquire(ctx context.Context, leases []Lease, acq []*redis.StatusCmd) error {
	for i, l := range leases {
		acq[i] = redis.NewStatusCmd(ctx, "set", l.Key, l.ph, "px", entry.PX(ls.ttl), "nx", "get")
	}
	if len(leases) == 1 {
		if err := ls.redis.Send(ctx, leases[0].Key, acq[0], nil); err != nil {
			acq[0] = redis.NewStatusCmd(ctx) // the sent one may still be written to
			acq[0].SetErr(err)
		}
		return acq[0].Err()
	}
	return pipe.Send(ctx, ls.redis.Client().Pipeline(), acq)
}

// TakeOver replaces foreign bytes under the key with our placeholder.
func (ls *Leases) TakeOver(ctx context.Context, l Lease, foreign []byte) (bool, error) {
	n, err := SwapScript.Run(ctx, ls.redis.Client(), []string{l.Key}, foreign, l.ph, entry.PX(ls.ttl)).Int()
	return n == 1, err
}

// TakeOverType takes a key holding another Redis type.
func (ls *Leases) TakeOverType(ctx context.Context, l Lease) (bool, error) {
	n, err := TypeTakeOverScript.Run(ctx, ls.redis.Client(), []string{l.Key}, l.ph, entry.PX(ls.ttl)).Int()
	return n == 1, err
}

// FillCall is the fill of l with value for ttl: it lands only if the key
// still holds l's placeholder.
func (l Lease) FillCall(value []byte, ttl time.Duration) script.Call {
	return script.Call{Script: FillScript, Keys: []string{l.Key}, Args: []any{l.ph, value, entry.PX(ttl), l.notify.cmd, l.notify.channel}}
}

// ReleaseCall is the release of l.
func (l Lease) ReleaseCall() script.Call {
	return script.Call{Script: ReleaseScript, Keys: []string{l.Key}, Args: []any{l.ph, l.notify.cmd, l.notify.channel}}
}

// HealCall takes the key over from prev, a placeholder without a TTL
// (HealScript).
func (ls *Leases) HealCall(l Lease, prev []byte) script.Call {
	return script.Call{Script: HealScript, Keys: []string{l.Key}, Args: []any{prev, l.ph, entry.PX(ls.ttl)}}
}

// releaseTimeout bounds a lease release. Releases run on a context detached
// from the call that took the lease, since they matter most when that call
// was cancelled.
const releaseTimeout = time.Second

// Release deletes the leases' placeholders where they are still ours, on a
// context detached from ctx (keeping its values) with its own timeout, so
// that whatever ended the call that took them, they do not stay behind.
func (ls *Leases) Release(ctx context.Context, leases []Lease) {
	if len(leases) == 0 {
		return
	}
	err := call.Err(ls.redis.Calls().Strict(), context.WithoutCancel(ctx), releaseTimeout, func(ctx context.Context) error {
		if len(leases) == 1 {
			c := leases[0].ReleaseCall()
			return c.Script.Run(ctx, ls.redis.Client(), c.Keys, c.Args...).Err()
		}
		calls := make([]script.Call, len(leases))
		for i, l := range leases {
			calls[i] = l.ReleaseCall()
		}
		_, err := script.Run(ctx, ls.redis.Client(), calls)
		return err
	})
	if err != nil {
		ls.rec.Report(telemetry.LeaseRelease, leases[0].Key, ls.redis.Error(leases[0].Key, "release lease", err))
	}
}

// MarkWaited marks the placeholders prev[i] of rkeys as waited for, in one
// pipeline; it returns which ones still held them (false: look again now).
func (ls *Leases) MarkWaited(ctx context.Context, rkeys []string, prev [][]byte) ([]bool, error) {
	return ls.fills.markWaited(ctx, rkeys, prev)
}

// Listen registers a waiter for the fill channels of rkeys, subscribing
// where needed. It returns nil when notifications are off for this client.
func (ls *Leases) Listen(ctx context.Context, rkeys []string) *Waiter {
	return ls.fills.listen(ctx, rkeys)
}

// Await waits out one step of a lease wait: until w hears a fill, the next
// poll, the end of left, or ctx.
func (ls *Leases) Await(ctx context.Context, w *Waiter, backoff *time.Duration, left time.Duration, key string) error {
	return ls.fills.await(ctx, w, backoff, left, key)
}
