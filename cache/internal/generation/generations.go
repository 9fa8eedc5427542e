package generation

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// Config is how often the generation is synced and how long a sync waits.
type Config struct {
	HealthInterval, HealthTimeout time.Duration
}

// Generations keeps a cache's generation in step with Redis: Clear moves
// it on, Sync and Run follow the key. Make it with New.
type Generations struct {
	cfg   Config
	keys  *Keys
	redis *transport.Redis
	bus   *bus.Bus
	life  *life.Group
	rec   *telemetry.Recorder
	// syncRDB runs the sync (and New's version probe), closed by Close.
	syncRDB   redis.UniversalClient
	closeSync func() error
}

// New returns the generations of keys; syncRDB and closeSync are the
// sync's client and its Close (NewSyncClient).
func New(cfg Config, keys *Keys, r *transport.Redis, b *bus.Bus, g *life.Group, rec *telemetry.Recorder, syncRDB redis.UniversalClient, closeSync func() error) *Generations {
	return &Generations{cfg: cfg, keys: keys, redis: r, bus: b, life: g, rec: rec, syncRDB: syncRDB, closeSync: closeSync}
}

// Close closes the sync's client: a sync waiting on a frozen node ends now.
func (c *Generations) Close() error { return c.closeSync() }
