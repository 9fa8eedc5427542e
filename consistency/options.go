package consistency

import (
	"log/slog"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
)

// Option configures a Queue. New rejects values that make no sense with an
// error wrapping ErrInvalidOption. A nil Option is ignored.
type Option func(*config)

type config struct {
	prefix       string
	delay        time.Duration
	writeGrace   time.Duration
	maxAttempts  int
	minBackoff   time.Duration
	maxBackoff   time.Duration
	batch        int
	visibility   time.Duration
	poll         time.Duration
	timeout      time.Duration
	deadLimit    int
	shards       int
	tombstoneTTL time.Duration
	worker       bool
	logger       *slog.Logger
	onError      func(error)

	clock clock // tests inject a fake one
	// pin replaces the server's clock in the scripts (tests that drive
	// time with a fake clock); nil in production.
	pin   func() time.Time
	hooks hooks

	errs option.Errors // the first invalid option
}

func defaultConfig() config {
	return config{
		prefix:       "cacheguard:consistency",
		delay:        500 * time.Millisecond,
		writeGrace:   10 * time.Second,
		maxAttempts:  10,
		minBackoff:   100 * time.Millisecond,
		maxBackoff:   30 * time.Second,
		batch:        100,
		visibility:   30 * time.Second,
		poll:         time.Second,
		timeout:      5 * time.Second,
		deadLimit:    10000,
		shards:       1,
		tombstoneTTL: time.Minute,
		worker:       true,
		clock:        realClock{},
		errs:         option.For(ErrInvalidOption),
	}
}

// WithPrefix sets the prefix of the queue's Redis keys (default
// "cacheguard:consistency"). All of them share the hash tag {prefix}, so
// they live in one slot of a Redis Cluster and the queue's scripts can touch
// several of them at once. Instances that should drain each other's deletes
// must use the same prefix; unrelated applications should not.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if prefix == "" || strings.ContainsAny(prefix, "{}") {
			c.errs.Invalid("prefix %q must be non-empty and contain no braces", prefix)
		}
		c.prefix = prefix
	}
}

// WithDelay sets how long after a write Update deletes the keys a second
// time (default 500 ms). It should exceed the replication lag of the replicas
// readers load from and the time a reader takes between reading the database
// and filling the cache.
func WithDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Invalid("delay %v must not be negative", d)
		}
		c.delay = d
	}
}

// WithWriteGrace sets how long Update expects a write to take at most
// (default 10 s). The second delete is recorded before the write, due after
// grace + delay; when the write returns it is moved to delay after that. If
// the process dies in between, another instance runs the delete when the
// provisional due time comes, so grace + delay bounds how long a stale value
// can survive a crash.
func WithWriteGrace(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Invalid("write grace %v must not be negative", d)
		}
		c.writeGrace = d
	}
}

// WithMaxAttempts sets how many times a queued delete is tried before it is
// dead-lettered (default 10).
func WithMaxAttempts(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("max attempts %d must be at least 1", n)
		}
		c.maxAttempts = n
	}
}

// WithBackoff sets the pause before the first retry of a failed delete and
// its cap (defaults 100 ms and 30 s). The pause doubles with each attempt and
// is jittered down by up to half, so that instances retrying after one outage
// do not retry in step.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) {
		c.errs.Backoff(min, max)
		c.minBackoff, c.maxBackoff = min, max
	}
}

// WithBatchSize sets how many due entries one claim takes (default 100).
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("batch size %d must be at least 1", n)
		}
		c.batch = n
	}
}

// WithVisibilityTimeout sets how long a claimed batch stays hidden from other
// instances (default 30 s). If the instance that claimed it dies, another one
// claims the batch again after this long. It must exceed two timeouts
// (WithTimeout).
func WithVisibilityTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("visibility timeout %v must be positive", d)
		}
		c.visibility = d
	}
}

// WithPollInterval bounds how long the worker sleeps between looks at the
// queue (default 1 s). Deletes this process schedules wake the worker on
// time; the interval bounds how late it notices entries left by others.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("poll interval %v must be positive", d)
		}
		c.poll = d
	}
}

// WithTimeout bounds each Redis call the queue makes and each delete its
// worker runs (default 5 s).
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("timeout %v must be positive", d)
		}
		c.timeout = d
	}
}

// WithDeadLetterLimit caps the dead-letter list (default 10000 entries; the
// oldest are dropped). The dead-letter counter is not capped.
func WithDeadLetterLimit(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("dead-letter limit %d must be at least 1", n)
		}
		c.deadLimit = n
	}
}

// WithShards spreads the queue's keys over n hash slots (default 1), so that
// on a Redis Cluster its scripts do not all land on one node. Each entry
// lives in one shard, chosen by its id, and every guarantee (claims, acks,
// retries, dead letters) holds within the shard; workers drain every shard.
// Dead letters are kept per shard and merged by DeadLetters and
// DeadLetterCount. Shard 0 keeps the single-shard key names, so raising n
// keeps existing entries; lowering it strands the entries of the shards
// dropped until it is raised again.
func WithShards(n int) Option {
	return func(c *config) {
		if n < 1 || n > 1024 {
			c.errs.Invalid("shards %d must be between 1 and 1024", n)
		}
		c.shards = n
	}
}

// WithoutWorker turns the background worker off (it runs by default). An
// instance without a worker still records deletes; others drain them.
func WithoutWorker() Option { return func(c *config) { c.worker = false } }

// WithLogger sets where errors that no caller sees are logged (a failed
// first delete, a retry, a dead letter). The default, and what a nil logger
// stands for, is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = option.Logger(l) } }

// WithErrorHandler registers fn to be called, besides the logger, with every
// error no caller sees, as a *TargetError that names the target and keys
// (errors.As). fn must be fast and safe for concurrent use; nil means no
// handler.
func WithErrorHandler(fn func(error)) Option {
	return func(c *config) { c.onError = fn }
}

// withClock injects a clock (tests). A clock that says so also stands in
// for the server's clock in the scripts.
func withClock(cl clock) Option {
	return func(c *config) {
		c.clock = cl
		if _, ok := cl.(interface{ pinsServerTime() }); ok {
			c.pin = cl.Now
		}
	}
}

// withHooks installs interleaving hooks (tests).
func withHooks(h hooks) Option { return func(c *config) { c.hooks = h } }

func (c *config) validate() error {
	if c.clock == nil {
		c.clock = realClock{}
	}
	if c.visibility <= 2*c.timeout {
		c.errs.Invalid("visibility timeout %v must exceed two timeouts (%v)", c.visibility, 2*c.timeout)
	}
	return c.errs.Err()
}

// WithTombstoneTTL sets how long a delete keeps the version of a versioned
// entry (default 1 minute; 0 turns it off). Invalidations of a cache that
// supports it (VersionKeeper: *cache.Cache is one) leave a version tombstone
// instead of an empty key, so that a SetVersioned older than the last one
// stored is refused even after the key was invalidated; readers still miss
// and reload. It must exceed the longest time a versioned write can take to
// reach Redis (a paused writer, retries). After it, the key is empty and a
// versioned write of any version lands again.
func WithTombstoneTTL(d time.Duration) Option {
	return func(c *config) {
		if d < 0 || (d > 0 && d < time.Millisecond) {
			c.errs.Invalid("tombstone TTL %v must be 0 or at least 1ms", d)
		}
		c.tombstoneTTL = d
	}
}
