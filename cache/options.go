package cache

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Option configures a Cache. Options are checked by New, which rejects values
// that make no sense with an error wrapping ErrInvalidOption.
type Option func(*config)

type config struct {
	prefix        string
	ttl           time.Duration
	jitter        float64
	nullTTL       time.Duration
	nullTTLSet    bool
	lease         time.Duration
	wait          time.Duration
	loadTimeout   time.Duration
	loadOnTimeout bool
	maxValueSize  int
	compressAt    int // WithCompression (compress.go)
	codec         Codec
	logger        *slog.Logger
	onError       func(key string, err error)
	filter        Filter
	missFilter    Filter
	local         localConfig
	earlyBeta     float64

	breakerFailures int
	breakerCooldown time.Duration
	fallbackLoads   int
	maxLoads        int

	hooks *hooks // tests only: installed before any goroutine starts

	errs []error
}

func defaultConfig() config {
	return config{
		ttl:          10 * time.Minute,
		jitter:       0.1,
		nullTTL:      time.Minute,
		lease:        3 * time.Second,
		wait:         2 * time.Second,
		loadTimeout:  10 * time.Second,
		maxValueSize: 1 << 20,
		codec:        JSONCodec{},
		local:        defaultLocalConfig(),
	}
}

func (c *config) invalid(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
}

// WithPrefix puts prefix in front of every key in Redis ("user:" turns key
// "42" into "user:42"). Give each Cache its own prefix.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithTTL sets how long a value stays cached (default 10 minutes), before
// jitter.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl <= 0 {
			c.invalid("TTL %v must be positive", ttl)
		}
		c.ttl = ttl
	}
}

// WithJitter spreads every TTL uniformly over [ttl·(1−f), ttl·(1+f)] so that
// keys filled together do not expire together (avalanche). f must be in
// [0, 1); the default is 0.1.
func WithJitter(f float64) Option {
	return func(c *config) {
		if math.IsNaN(f) || f < 0 || f >= 1 {
			c.invalid("jitter %v must be in [0, 1)", f)
		}
		c.jitter = f
	}
}

// WithNullTTL sets how long an absence (the loader returned ErrNotFound) is
// cached, jittered like values (default 1 minute, or the TTL if shorter). It
// must not exceed the TTL.
func WithNullTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl <= 0 {
			c.invalid("null TTL %v must be positive", ttl)
		}
		c.nullTTL, c.nullTTLSet = ttl, true
	}
}

// WithLease sets the length of a fill lease (default 3 s). The holder extends
// it every lease/3 while its loader runs, so it bounds how long a crashed
// holder blocks other callers, not how long a load may take.
func WithLease(ttl time.Duration) Option {
	return func(c *config) {
		if ttl < 10*time.Millisecond {
			c.invalid("lease %v must be at least 10ms", ttl)
		}
		c.lease = ttl
	}
}

// WithWait sets how long a caller waits for a fill by another process before
// Get returns ErrWaitTimeout (default 2 s). Zero means do not wait.
func WithWait(max time.Duration) Option {
	return func(c *config) {
		if max < 0 {
			c.invalid("wait %v must not be negative", max)
		}
		c.wait = max
	}
}

// WithLoadTimeout bounds a loader call (default 10 s). The load runs detached
// from the first caller's context so that its cancellation does not fail the
// other callers sharing the load; this bound keeps it from running forever.
func WithLoadTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalid("load timeout %v must be positive", d)
		}
		c.loadTimeout = d
	}
}

// WithLoadOnWaitTimeout makes Get call its loader itself, without caching the
// result, when the wait budget runs out, instead of returning ErrWaitTimeout.
// It trades database protection for availability; off by default.
func WithLoadOnWaitTimeout(on bool) Option { return func(c *config) { c.loadOnTimeout = on } }

// WithMaxValueSize sets the largest encoded value cached, in bytes (default
// 1 MiB; big values block Redis). Zero or less disables the limit.
func WithMaxValueSize(n int) Option { return func(c *config) { c.maxValueSize = n } }

// WithCodec sets the codec for values other than string and []byte.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec == nil {
			c.invalid("nil codec")
		}
		c.codec = codec
	}
}

// WithLogger sets where errors that are not returned to a caller are logged
// (a failed lease release, a rejected fill, a value too large to cache). The
// default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithErrorHandler registers fn to be called with every error that is not
// returned to a caller, in addition to the logger. fn must be fast and safe
// for concurrent use.
func WithErrorHandler(fn func(key string, err error)) Option {
	return func(c *config) { c.onError = fn }
}

// WithEarlyRefresh turns on probabilistic early refresh (XFetch): a hit close
// to its expiry triggers a background reload with a probability that grows as
// expiry nears and with the time the last load took, so a hot key is
// refreshed before it expires rather than stampeding when it does. beta
// scales the eagerness; 1 is the usual choice, 0 turns it off.
func WithEarlyRefresh(beta float64) Option {
	return func(c *config) {
		if math.IsNaN(beta) || beta < 0 {
			c.invalid("early refresh beta %v must be >= 0", beta)
		}
		c.earlyBeta = beta
	}
}

func (c *config) validate() error {
	if !c.nullTTLSet && c.nullTTL > c.ttl {
		c.nullTTL = c.ttl // the default adapts to a short TTL
	}
	if c.nullTTL > c.ttl {
		c.invalid("null TTL %v longer than TTL %v", c.nullTTL, c.ttl)
	}
	if len(c.errs) > 0 {
		return c.errs[0]
	}
	return nil
}
