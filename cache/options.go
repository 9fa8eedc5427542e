package cache

import (
	"log/slog"
	"math"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/engine"
	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/option"
)

// Option configures a Cache. Options are checked by New, which rejects values
// that make no sense with an error wrapping ErrInvalidOption. A nil Option is
// ignored.
type Option func(*config)

type config struct {
	prefix        string
	prefixSet     bool
	ttl           time.Duration
	jitter        float64
	nullTTL       time.Duration
	nullTTLSet    bool
	lease         time.Duration
	wait          time.Duration
	waitSet       bool
	loadTimeout   time.Duration
	loadOnTimeout bool
	maxValueSize  int
	compressAt    int // WithCompression
	codec         entry.Codec
	logger        *slog.Logger
	onError       func(error)
	logInterval   time.Duration // WithLogInterval
	filter        engine.Filter // WithBloom
	missFilter    engine.Filter // WithBloomOnMiss
	local         localConfig
	copies        int           // WithHotKeyCopies; 0: none
	copyTTL       time.Duration // a copy's longest life
	replicaLag    time.Duration // WithReplicaReads; 0: off
	earlyBeta     float64

	breakerFailures int
	breakerCooldown time.Duration
	fallbackLoads   int
	maxLoads        int
	closeTimeout    time.Duration
	observer        Observer       // WithObserver
	limiter         engine.Limiter // WithKeyRateLimit
	softLoadTimeout time.Duration  // WithSoftLoadTimeout

	hooks *hook.Set // tests only: installed before any goroutine starts

	errs option.Errors // the first invalid option
}

func defaultConfig() config {
	return config{
		ttl:          10 * time.Minute,
		jitter:       0.1,
		nullTTL:      time.Minute,
		lease:        3 * time.Second,
		loadTimeout:  10 * time.Second,
		closeTimeout: 5 * time.Second,
		logInterval:  telemetry.DefaultLogInterval,
		maxValueSize: 1 << 20,
		codec:        JSONCodec{},
		local:        defaultLocalConfig(),
		errs:         option.For(ErrInvalidOption),
	}
}

// checkTTL rejects a TTL-like option that is not positive, under least or
// too long. A TTL written to Redis must be at least entry.MinTTL; one
// kept in memory only, just positive.
func (c *config) checkTTL(what string, d, least time.Duration) {
	switch {
	case d <= 0:
		c.errs.Invalid("%s %v must be positive", what, d)
	case d < least:
		c.errs.Invalid("%s %v is under %v, the shortest expiry Redis keeps", what, d, least)
	case d > entry.MaxTTL:
		c.errs.Invalid("%s %v is longer than %v: it would overflow once jittered", what, d, entry.MaxTTL)
	}
}

// WithPrefix puts prefix in front of every key in Redis ("user:" turns key
// "42" into "user:42"). It is the one option New requires: give each Cache
// its own prefix, since two caches sharing keys overwrite each other's
// entries. WithPrefix("") keeps keys as they are, for a cache that has a
// Redis database to itself.
func WithPrefix(prefix string) Option {
	return func(c *config) { c.prefix, c.prefixSet = prefix, true }
}

// WithTTL sets how long a value stays cached (default 10 minutes), before
// jitter. It must be at least 1 ms: Redis keeps expiries in whole
// milliseconds, and every TTL written to it, jittered or chosen by
// Values.TTL, is cut to whole milliseconds and raised to 1 ms if shorter.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		c.checkTTL("TTL", ttl, entry.MinTTL)
		c.ttl = ttl
	}
}

// WithJitter spreads every TTL uniformly over [ttl·(1−f), ttl·(1+f)] so that
// keys filled together do not expire together (avalanche). f must be in
// [0, 1); the default is 0.1.
func WithJitter(f float64) Option {
	return func(c *config) {
		if math.IsNaN(f) || f < 0 || f >= 1 {
			c.errs.Invalid("jitter %v must be in [0, 1)", f)
		}
		c.jitter = f
	}
}

// WithNullTTL sets how long an absence (the loader returned ErrNotFound) is
// cached, jittered like values (default 1 minute, or the TTL if shorter). It
// must be at least 1 ms (as WithTTL) and must not exceed the TTL.
func WithNullTTL(ttl time.Duration) Option {
	return func(c *config) {
		c.checkTTL("null TTL", ttl, entry.MinTTL)
		c.nullTTL, c.nullTTLSet = ttl, true
	}
}

// WithFillLease sets the length of a fill lease, the placeholder that makes
// one caller across all processes load a missing key (default 3 s). The
// holder extends it every lease/3 while its loader runs, so it bounds how
// long a crashed holder blocks other callers, not how long a load may take.
func WithFillLease(ttl time.Duration) Option {
	return func(c *config) {
		if ttl < 10*time.Millisecond {
			c.errs.Invalid("fill lease %v must be at least 10ms", ttl)
		}
		c.lease = ttl
	}
}

// WithWait sets how long a caller waits for a fill by another process before
// Get returns ErrWaitTimeout. Zero means do not wait. The default is 4/3 of
// the lease (4 s with the default lease), so that it always outlasts one
// lease: a waiter then sees a slow fill through one extension period, and
// takes over the lease of a holder that died instead of timing out first. A
// shorter wait is allowed (fail fast), at the price of ErrWaitTimeout for
// fills that are merely slow.
func WithWait(max time.Duration) Option {
	return func(c *config) {
		if max < 0 {
			c.errs.Invalid("wait %v must not be negative", max)
		}
		c.wait, c.waitSet = max, true
	}
}

// WithLoadTimeout bounds a loader call (default 10 s). The load runs detached
// from the first caller's context so that its cancellation does not fail the
// other callers sharing the load; this bound keeps it from running forever.
func WithLoadTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("load timeout %v must be positive", d)
		}
		c.loadTimeout = d
	}
}

// WithCloseTimeout bounds how long Close waits for the loads it cancels to
// return (default 5 s). A loader that ignores its context can hold its
// goroutine past that; Close then releases its lease anyway (the late fill
// is refused) and returns an error wrapping context.DeadlineExceeded.
func WithCloseTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("close timeout %v must be positive", d)
		}
		c.closeTimeout = d
	}
}

// WithLoadOnWaitTimeout makes Get call its loader itself, without caching the
// result, when the wait budget runs out, instead of returning ErrWaitTimeout.
// It trades database protection for availability; off by default.
func WithLoadOnWaitTimeout() Option { return func(c *config) { c.loadOnTimeout = true } }

// WithMaxValueSize sets the largest encoded value cached, in bytes (default
// 1 MiB; big values block Redis). Zero or less disables the limit.
func WithMaxValueSize(n int) Option { return func(c *config) { c.maxValueSize = n } }

// WithCodec sets the codec for values other than string and []byte.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec == nil {
			c.errs.Invalid("nil codec")
		}
		c.codec = codec
	}
}

// WithLogger sets where errors that are not returned to a caller are logged
// (a failed lease release, a rejected fill, a value too large to cache). The
// default, and what a nil logger stands for, is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = option.Logger(l) } }

// WithLogInterval sets how repeated errors are logged (default 10 s): the
// first error of a kind (a stale entry served, a fill that failed, ...) is
// logged at once, the next ones of that kind are counted, and the first one
// after d has passed logs a single line with the count and the last key and
// error (Close logs what is left). Zero logs every error. The error handler
// and Stats see every error whatever d is.
func WithLogInterval(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Invalid("log interval %v must not be negative", d)
		}
		c.logInterval = d
	}
}

// WithErrorHandler registers fn to be called with every error that is not
// returned to a caller, in addition to the logger; it is not aggregated like
// the log (WithLogInterval). An error about one key is a *KeyError, which
// names it (errors.As). fn must be fast and safe for concurrent use; nil
// means no handler.
func WithErrorHandler(fn func(error)) Option {
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
			c.errs.Invalid("early refresh beta %v must be >= 0", beta)
		}
		c.earlyBeta = beta
	}
}

func (c *config) validate() error {
	if !c.prefixSet {
		c.errs.Invalid("no key prefix: name this cache's keys with WithPrefix (caches on one Redis without one share keys and overwrite each other's entries; WithPrefix(\"\") keeps keys unprefixed)")
	}
	if !c.nullTTLSet && c.nullTTL > c.ttl {
		c.nullTTL = c.ttl // the default adapts to a short TTL
	}
	if c.nullTTL > c.ttl {
		c.errs.Invalid("null TTL %v longer than TTL %v", c.nullTTL, c.ttl)
	}
	if !c.waitSet {
		c.wait = c.lease + c.lease/3 // see WithWait
	}
	if c.local.enabled() && c.local.hot == nil && !c.local.admitAll {
		c.errs.Invalid("the local tier needs WithHotKeys or WithLocalAdmitAll")
	}
	if !c.local.enabled() {
		// Silently ignored, they would leave the user believing hot keys
		// are served from memory.
		if c.local.hot != nil && c.copies == 0 {
			c.errs.Invalid("WithHotKeys needs a local tier (WithLocal, WithLocalRistretto or Values.LocalStore) or WithHotKeyCopies")
		}
		if c.local.admitAll {
			c.errs.Invalid("WithLocalAdmitAll needs a local tier (WithLocal, WithLocalRistretto or Values.LocalStore)")
		}
		if c.local.tracking {
			c.errs.Invalid("WithTracking needs a local tier (WithLocal, WithLocalRistretto or Values.LocalStore)")
		}
	}
	if c.softLoadTimeout > 0 && c.softLoadTimeout >= c.loadTimeout {
		c.errs.Invalid("soft load timeout %v must be shorter than the load timeout %v", c.softLoadTimeout, c.loadTimeout)
	}
	return c.errs.Err()
}

type localConfig struct {
	maxBytes  int64
	ristretto bool   // WithLocalRistretto
	given     bool   // Values.LocalStore
	storeBy   string // the option that chose the store: only one may
	ttl       time.Duration
	stale     time.Duration
	admitAll  bool
	hot       local.HotKeys
	channel   string

	healthInterval, healthTimeout time.Duration // WithInvalidationHealthCheck
	tracking                      bool          // WithTracking
}

func defaultLocalConfig() localConfig {
	return localConfig{ttl: time.Second, stale: 10 * time.Second,
		healthInterval: time.Second, healthTimeout: time.Second}
}

func (l *localConfig) enabled() bool { return l.maxBytes > 0 || l.given }
