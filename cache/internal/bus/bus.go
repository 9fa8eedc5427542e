// Package bus is the cache's invalidation channel: every write is
// published there for the other instances (publish.go), and every instance
// subscribes to hear theirs (subscribe.go), with or without a local tier
// (generation announcements travel on it too).
//
// Pub/sub delivers at most once, so nothing here trusts it blindly:
//
//   - Publishing is detached from the writer: once Redis has the write, the
//     message is sent on a context of its own and retried, whatever happens
//     to the writer's context. Messages carry a per-publisher sequence
//     number.
//   - The subscription is one of the client's shared pub/sub connections
//     (internal/pubsub), checked by a PING every health interval; each
//     answered PING proves every message published before it arrived, and
//     the Listener hears how long that vouches for (Up, Healthy). A missed
//     reply, an error or the server ending the subscription ends the
//     session (Down); the next one dials the node serving the channel then.
//   - A gap in a publisher's sequence numbers (a message lost or given up),
//     and a message that does not decode, are told as Lost: their keys are
//     unknown.
//
// On a Redis Cluster the channel is a sharded one (SPUBLISH / SSUBSCRIBE),
// so the message goes to one shard instead of every node.
package bus

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
)

const (
	MaxKeysPerInval  = 1024     // a batch of writes is split into messages of at most this many keys
	maxBytesPerInval = 64 << 10 // ... or about this many bytes
)

// Config names the channel and the health check of its subscription.
type Config struct {
	Prefix  string // the cache's key prefix (its fill channels are named from it)
	Channel string
	// HealthInterval and HealthTimeout: a PING every interval, its reply
	// wanted within the timeout; their sum is how long a reply vouches.
	HealthInterval, HealthTimeout time.Duration
}

// Bus is one cache's invalidation channel. Make it with New.
type Bus struct {
	cfg    Config
	source [wire.SourceIDSize]byte
	redis  *transport.Redis
	hub    *pubsub.Hub
	life   *life.Group
	rec    *telemetry.Recorder
	hooks  *hook.Set
	pub    publisher
	sub    *pubsub.Sub
	// subscribed is closed once the first subscription is confirmed.
	subscribed chan struct{}
	// Stats behind the Invalidation* and Subscription* fields of Stats.
	Sent, SendFailures, Received, Gaps, Lost, DecodeErrors, Downs, Refused atomic.Uint64
	lag, lagMax                                                            atomic.Int64 // nanoseconds
}

// New returns the bus of a cache; Subscribe starts listening.
func New(cfg Config, r *transport.Redis, hub *pubsub.Hub, g *life.Group, rec *telemetry.Recorder, hooks *hook.Set) (*Bus, error) {
	b := &Bus{cfg: cfg, redis: r, hub: hub, life: g, rec: rec, hooks: hooks, subscribed: make(chan struct{})}
	if _, err := rand.Read(b.source[:]); err != nil {
		return nil, err
	}
	return b, nil
}

// Channel is the invalidation channel's name.
func (b *Bus) Channel() string { return b.cfg.Channel }

// Subscribed is closed once the first subscription is confirmed.
func (b *Bus) Subscribed() <-chan struct{} { return b.subscribed }

// Lag is the publish-to-apply delay of the latest message, and the largest.
func (b *Bus) Lag() (last, most time.Duration) {
	return time.Duration(b.lag.Load()), time.Duration(b.lagMax.Load())
}

func (b *Bus) observeLag(d time.Duration) {
	b.lag.Store(int64(d))
	for {
		m := b.lagMax.Load()
		if int64(d) <= m || b.lagMax.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Close ends the subscription (the hub is the caller's).
func (b *Bus) Close() { b.sub.Close() }

type publisher struct {
	mu      sync.Mutex
	queue   []*pendingInval
	running bool   // a sender goroutine is draining the queue
	seq     uint64 // last sequence number used; only the sender touches it
}

type pendingInval struct {
	keys    []string
	tags    []string // invalidated at tagTime (Unix ms): the write path
	tagTime int64
	ctx     context.Context // the writer's, without its cancellation (values only)
	done    chan struct{}   // closed once the keys are sent or given up
}
