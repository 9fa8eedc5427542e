package generation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pubsub"
)

// Config is how often the generation is synced and how long a sync waits.
type Config struct {
	HealthInterval, HealthTimeout time.Duration
}

// Generations keeps a cache's generation in step with Redis: Clear moves
// it on, the client's shared Syncer follows the key. Make it with New.
type Generations struct {
	cfg    Config
	keys   *Keys
	redis  *transport.Redis
	bus    *bus.Bus
	life   *life.Group
	rec    *telemetry.Recorder
	syncer *Syncer
	// first is closed by the first sync that answered (or by the version
	// probe refusing the server, then err holds why); until then calls
	// wait for it (Await), at most until patience.
	first    chan struct{}
	once     sync.Once
	isReady  atomic.Bool
	err      error // set before first is closed
	patience time.Time
	lastErr  atomic.Pointer[error] // the last sync's failure, for Ready
}

// New returns the generations of keys, synced by the client's shared
// Syncer (hub's) from now on. New does no I/O: the first sync runs at once
// in the background, and calls wait for it (Await) at most the health
// timeout from now.
func New(cfg Config, keys *Keys, r *transport.Redis, b *bus.Bus, g *life.Group, rec *telemetry.Recorder, hub *pubsub.Hub) *Generations {
	c := &Generations{cfg: cfg, keys: keys, redis: r, bus: b, life: g, rec: rec,
		first: make(chan struct{}), patience: time.Now().Add(cfg.HealthTimeout)}
	c.syncer = syncerOf(hub, r.Client())
	c.syncer.join(c)
	return c
}

// Close takes the cache out of the shared sync.
func (c *Generations) Close() { c.syncer.leave(c) }

// ready ends the wait for the first sync, with err (nil: synced).
func (c *Generations) ready(err error) {
	if c.isReady.Load() {
		return
	}
	c.once.Do(func() {
		c.err = err
		c.isReady.Store(true) // after err: a caller that sees it sees err
		close(c.first)
	})
}

// Await waits for the cache's first sync, so that no call reads or writes
// in a generation that a Clear before New left behind: it returns at once
// once the first sync answered (its error: the server was refused), and
// otherwise waits until it does, ctx ends (its error), or the health
// timeout since New has passed (nil: the call goes on in the generation
// the cache has, as it does whenever Redis does not answer).
func (c *Generations) Await(ctx context.Context) error {
	if c.isReady.Load() {
		return c.err
	}
	wait := time.Until(c.patience)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.first:
		return c.err
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Closing().Done():
		return errs.ErrClosed
	}
}

// Ready waits for the cache's first sync with Redis (and the server's
// version check), however long it takes, until ctx ends: nil once synced,
// an error wrapping ErrUnsupportedServer for a server below Redis 7, or
// ctx's error joined with the last sync's failure.
func (c *Generations) Ready(ctx context.Context) error {
	select {
	case <-c.first:
		return c.err
	default:
	}
	select {
	case <-c.first:
		return c.err
	case <-c.life.Closing().Done():
		return errs.ErrClosed
	case <-ctx.Done():
		if last := c.lastErr.Load(); last != nil {
			return kind.Errorf("cacheguard: cache: not ready: %w (the last sync: %w)", ctx.Err(), c.redis.Error("", "sync generation", *last))
		}
		return kind.Errorf("cacheguard: cache: not ready: %w", ctx.Err())
	}
}

// Resync syncs the generation soon after a subscription gap, in which an
// announcement may have been lost.
func (c *Generations) Resync() { c.syncer.kickNow() }

// Sync syncs this cache's generation now, on the shared sync client,
// waiting at most the health timeout.
func (c *Generations) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HealthTimeout)
	defer cancel()
	if err := syncMany(ctx, c.syncer.bound, c.syncer.rdb, []*Generations{c}); err != nil {
		return kind.Errorf("cacheguard: cache: sync the generation of %q: %w", c.keys.Prefix(), err)
	}
	return nil
}
