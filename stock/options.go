package stock

import (
	"fmt"
	"log/slog"
	"time"
)

// MaxIDLen bounds SKUs, user ids and request ids (bytes). It keeps Redis
// fields and database keys small enough to index (VARCHAR(128)).
const MaxIDLen = 128

// Option configures an Inventory.
type Option func(*config)

type config struct {
	ns         string
	buckets    int
	perUser    int64
	holdFor    time.Duration
	soldOutTTL time.Duration
	logger     *slog.Logger
	maxOutbox  int64
	err        error
}

func defaultConfig() config {
	return config{
		ns:      "stock",
		buckets: 1,
		perUser: 1,
		holdFor: 15 * time.Minute,
		logger:  slog.Default(),
	}
}

func (c *config) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithNamespace sets the prefix of every Redis key ("stock" by default).
func WithNamespace(ns string) Option {
	return func(c *config) {
		if ns == "" || len(ns) > MaxIDLen || hasBrace(ns) {
			c.invalid("namespace %q", ns)
		}
		c.ns = ns
	}
}

// WithBuckets spreads each SKU's stock over n buckets, each under its own hash
// tag, so that the slots of a Redis Cluster share a hot SKU. It must match
// the value the sale was loaded with. The default is 1.
func WithBuckets(n int) Option {
	return func(c *config) {
		if n < 1 || n > 1024 {
			c.invalid("buckets %d (want 1..1024)", n)
		}
		c.buckets = n
	}
}

// WithPerUserLimit sets how many units one user may hold in a sale (reserved
// plus confirmed; released units no longer count). It is written into the
// sale by Load, so every process enforces the same limit. The default is 1.
func WithPerUserLimit(n int64) Option {
	return func(c *config) {
		if n < 1 || n > MaxQty {
			c.invalid("per-user limit %d (1 to %d)", n, MaxQty)
		}
		c.perUser = n
	}
}

// WithHoldFor sets how long a reservation waits for Confirm before its stock
// returns to the sale (written into the sale by Load). 0 keeps reservations
// until released. The default is 15 minutes.
func WithHoldFor(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("hold %v", d)
		}
		c.holdFor = d
	}
}

// WithLocalSoldOut makes this process remember for d that a SKU is sold out
// or its sale has ended, and answer Reserve from that memory (Result.Local)
// without asking Redis: after the sale, requests stop reaching Redis. Stock
// that comes back (a release, an expiry) is sold again once the memory
// lapses. The price: a Local answer is not looked up under the request id,
// so a retry of a request that did reserve (its first answer was lost) can
// be told SoldOut locally; such a client must check with Lookup. The
// default, 0, keeps the memory off and every answer authoritative.
func WithLocalSoldOut(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("local sold-out memory %v", d)
		}
		c.soldOutTTL = d
	}
}

// WithOutboxMaxLen caps each outbox stream at about n entries (XADD MAXLEN ~).
// Entries not yet consumed are never trimmed by the package otherwise, so the
// cap is a guard against a consumer that never runs; 0 (the default) means
// no cap, which is what guarantees that no message is lost.
func WithOutboxMaxLen(n int64) Option {
	return func(c *config) {
		if n < 0 {
			c.invalid("outbox max length %d", n)
		}
		c.maxOutbox = n
	}
}

// WithLogger sets where problems no caller sees are logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("nil logger")
		}
		c.logger = l
	}
}
