package lock

import (
	"log/slog"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/option"
)

// Defaults. The watchdog lease follows Redisson's: long enough that a GC
// pause or a slow network does not lose the lock, short enough that a crashed
// holder frees it within half a minute.
const (
	// DefaultLease is the lease the watchdog renews (see WithLease).
	DefaultLease = 30 * time.Second
	// DefaultPrefix starts every key and channel (see WithPrefix).
	DefaultPrefix = "cacheguard:lock:"
	// DefaultMinBackoff and DefaultMaxBackoff bound the fallback retries
	// of a waiting Lock (see WithBackoff).
	DefaultMinBackoff = 4 * time.Millisecond
	DefaultMaxBackoff = 500 * time.Millisecond
	// DefaultDriftFactor is the clock drift allowance, as a fraction of
	// the lease (see WithDriftFactor).
	DefaultDriftFactor = 0.01
	// DefaultNodeTimeout bounds each Redlock call to one node (see
	// WithNodeTimeout).
	DefaultNodeTimeout = 50 * time.Millisecond

	// minLease keeps leases above the millisecond granularity of PEXPIRE and
	// above the drift allowance.
	minLease = 10 * time.Millisecond
	// driftFloor is added to every drift allowance (Redlock's 2 ms).
	driftFloor = 2 * time.Millisecond
)

// Option configures a Client, a Redlock, or one Mutex, RWMutex, Semaphore
// or MultiLock. Options given to a lock override those of its client. An
// option given to a constructor it does not configure (WithNodeTimeout to
// New, WithoutFencing to a Semaphore) is invalid. A nil Option is ignored.
// An invalid option makes New (or the lock's first call) return an error
// wrapping ErrInvalidOption.
type Option func(*config)

type config struct {
	prefix      string
	lease       time.Duration
	fixed       bool // the lease is fixed: no watchdog renews it
	minBackoff  time.Duration
	maxBackoff  time.Duration
	drift       float64
	nodeTimeout time.Duration
	opTimeout   time.Duration // 0: each call bounded by its lease
	calls       call.Bound    // how Redis calls are bounded (see bounded.go)
	report      option.Reporter
	observer    Observer      // WithObserver (observe.go)
	unfenced    bool          // WithoutFencing (unfenced.go)
	errs        option.Errors // the first invalid option
	built       option.Part   // what the options being applied configure
}

// What a constructor builds, for the options that configure some only.
const (
	partClient       option.Part = 1 << iota // New
	partRedlock                              // NewRedlock
	partMultiLock                            // NewMultiLock
	partMutex                                // Client.Mutex, Client.MultiLock
	partRedlockMutex                         // Redlock.Mutex
	partRWMutex                              // Client.RWMutex
	partSemaphore                            // Client.Semaphore
)

// partNames names the parts in refusals: "a Client or a Redlock".
var partNames = option.PartNames{{partClient, "a Client"}, {partRedlock, "a Redlock"}, {partMultiLock, "a MultiLock of NewMultiLock"},
	{partMutex, "a Client's Mutex"}, {partRedlockMutex, "a Redlock's Mutex"}, {partRWMutex, "an RWMutex"},
	{partSemaphore, "a Semaphore"}}

func defaultConfig() config {
	return config{
		prefix:      DefaultPrefix,
		lease:       DefaultLease,
		minBackoff:  DefaultMinBackoff,
		maxBackoff:  DefaultMaxBackoff,
		drift:       DefaultDriftFactor,
		nodeTimeout: DefaultNodeTimeout,
		report:      option.NewReporter(nil, nil),
		errs:        option.For(ErrInvalidOption),
	}
}

// apply applies opts to c for a constructor of what built names.
func (c *config) apply(built option.Part, opts []Option) {
	c.built = built
	option.Apply(c, opts)
}

// driftFor is the allowance subtracted from a lease when computing how long
// the holder may trust it: clocks of the holder and of Redis advance at
// slightly different rates.
func (c *config) driftFor(lease time.Duration) time.Duration {
	return time.Duration(float64(lease)*c.drift) + driftFloor
}

// validUntil is until when a holder may trust a lease of pttl ms that Redis
// reported for a request sent at start: the server set it at some moment
// after start, so start + pttl is early enough, less the drift allowance.
func (c *config) validUntil(start time.Time, pttl int64) time.Time {
	d := time.Duration(pttl) * time.Millisecond
	return start.Add(d - c.driftFor(d))
}

// markTTL is how long a waiting writer's place ahead of new readers lasts
// unless it tries again: a writer that died blocks new readers that long.
func (c *config) markTTL() time.Duration {
	return min(c.lease, maxMarkTTL)
}

const maxMarkTTL = 2 * time.Second

// WithPrefix sets the prefix of every key and channel (default
// "cacheguard:lock:"). It may not contain '{' or '}', which would change
// the hash tag.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if c.errs.Prefix(prefix) {
			c.prefix = prefix
		}
	}
}

// WithLease sets the lease locks are taken with (30 s by default): while a
// lock is held the client's watchdog renews it every d/3, so work may take
// as long as it needs and a holder that dies frees the lock within d. With
// WithoutWatchdog the lease is fixed instead.
func WithLease(d time.Duration) Option {
	return func(c *config) {
		if d < minLease {
			c.errs.Invalid("lease %v is shorter than %v", d, minLease)
			return
		}
		c.lease = d
	}
}

// WithoutWatchdog gives locks a fixed lease: a lock expires its lease after
// it was taken (or last extended with Handle.Extend) and nothing renews it.
// The handle's context is cancelled when the lease runs out.
func WithoutWatchdog() Option { return func(c *config) { c.fixed = true } }

// WithBackoff bounds the jittered exponential backoff between attempts of a
// waiting Lock. Waiters are normally woken by the release notification; the
// backoff is the fallback when a notification is missed, and every wait is
// also capped by the remaining lease of the current holder.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) {
		if !c.errs.Backoff(min, max) {
			return
		}
		c.minBackoff, c.maxBackoff = min, max
	}
}

// WithDriftFactor sets the clock drift allowance as a fraction of the lease
// (default 0.01, plus 2 ms). A holder trusts its lock for lease minus the
// allowance.
func WithDriftFactor(f float64) Option {
	return func(c *config) {
		if f < 0 || f >= 0.5 {
			c.errs.Invalid("drift factor %v outside [0, 0.5)", f)
			return
		}
		c.drift = f
	}
}

// WithNodeTimeout bounds each Redlock call to one node (default 50 ms), so
// that a dead node costs a bounded part of the lease.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) {
		if !c.errs.Only("WithNodeTimeout", partRedlock|partRedlockMutex, c.built, partNames) {
			return
		}
		if d <= 0 {
			c.errs.Invalid("node timeout %v is not positive", d)
			return
		}
		c.nodeTimeout = d
	}
}

// WithLogger sets the logger for errors the package handles itself (failed
// renewals, notification connection trouble, best-effort cleanups). The
// default, and what a nil logger stands for, is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if c.errs.Only("WithLogger", partClient|partRedlock|partMultiLock, c.built, partNames) {
			c.report.Logger = option.Logger(l)
		}
	}
}

// WithErrorHandler hands fn every error the package handles itself (those
// WithLogger logs), after it is logged: for metrics or alerts. fn runs on
// the goroutine that met the error (the watchdog's, for a failed renewal)
// and must return quickly.
func WithErrorHandler(fn func(error)) Option {
	return func(c *config) {
		if c.errs.Only("WithErrorHandler", partClient|partRedlock|partMultiLock, c.built, partNames) {
			c.report.Handler = fn
		}
	}
}

// WithTimeout bounds every Redis call of a lock (each attempt of Lock, each
// renewal, each release), whatever the caller's context allows. The default
// bounds each call by the lock's lease: a reply that takes longer is of no
// use. A call cut short fails with an error matching ErrRedis and
// context.DeadlineExceeded.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("timeout %v is not positive", d)
			return
		}
		c.opTimeout = d
		c.calls = c.calls.Strict()
	}
}
