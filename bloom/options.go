package bloom

import (
	"log/slog"
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
)

// Option configures a filter. NewLocal, NewRedis and ReadLocal reject a value
// that makes no sense with an error wrapping ErrInvalidOption. A nil Option
// is ignored.
type Option func(*config)

type config struct {
	batch    int
	every    int64
	progress func(Progress)
	lease    time.Duration
	interval time.Duration // a Fleet's health check
	timeout  time.Duration
	report   option.Reporter
	now      func() time.Time
	errs     option.Errors // the first invalid option
	built    option.Part   // what the options configure
}

// What a constructor builds, for the options that configure some only.
const (
	partLocal option.Part = 1 << iota // NewLocal, ReadLocal
	partRedis                         // NewRedis
	partFleet                         // NewFleet
)

// partNames names the parts in refusals: "a Redis filter or a Fleet filter".
var partNames = option.PartNames{{partLocal, "a Local filter"}, {partRedis, "a Redis filter"}, {partFleet, "a Fleet filter"}}

func defaultConfig() config {
	return config{
		batch:    1000,
		lease:    30 * time.Second,
		interval: time.Second,
		timeout:  time.Second,
		report:   option.NewReporter(nil, nil),
		now:      time.Now,
		errs:     option.For(ErrInvalidOption),
	}
}

// WithHealthCheck sets how a Fleet filter checks the subscription that
// brings the other instances' adds: a PING every interval, its reply wanted
// within timeout (1 s each by default). Their sum is the filter's bound: a
// key added anywhere is found by MayContain on every instance at most that
// long after its Add returned, whatever happens to pub/sub. Both must be
// positive. It configures a Fleet filter only.
func WithHealthCheck(interval, timeout time.Duration) Option {
	return func(c *config) {
		if !c.errs.Only("WithHealthCheck", partFleet, c.built, partNames) {
			return
		}
		if interval <= 0 || timeout <= 0 {
			c.errs.Invalid("health check every %v within %v: both must be positive", interval, timeout)
			return
		}
		c.interval, c.timeout = interval, timeout
	}
}

// WithLogger sets where a Fleet filter reports what it does not return (a
// lost subscription, a gap in the adds, a failed reread); the default, and
// what nil stands for, is slog.Default(). It configures a Fleet filter only.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if c.errs.Only("WithLogger", partFleet, c.built, partNames) {
			c.report.Logger = option.Logger(l)
		}
	}
}

// WithErrorHandler hands fn every error WithLogger logs, after it is
// logged: for metrics or alerts. fn must return quickly. It configures a
// Fleet filter only.
func WithErrorHandler(fn func(error)) Option {
	return func(c *config) {
		if c.errs.Only("WithErrorHandler", partFleet, c.built, partNames) {
			c.report.Handler = fn
		}
	}
}

// newConfig applies opts for a constructor of what built names.
func newConfig(built option.Part, opts []Option) (config, error) {
	c := defaultConfig()
	c.built = built
	option.Apply(&c, opts)
	return c, c.errs.Err()
}

// WithBatchSize sets how many keys travel together: per script call for the
// Redis filter's batched adds and tests and its rebuild, per lock hold for a
// Local rebuild (default 1000). It must be at least 1.
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs.Invalid("batch size %d must be at least 1", n)
			return
		}
		c.batch = n
	}
}

// WithProgress makes Rebuild call fn after every `every` keys read from the
// source, and once more when the rebuild ends (Progress.Done). fn runs on the
// rebuilding goroutine; keep it short. every must be at least 1.
func WithProgress(every int, fn func(Progress)) Option {
	return func(c *config) {
		if every < 1 {
			c.errs.Invalid("progress every %d keys must be at least 1", every)
			return
		}
		c.every, c.progress = int64(every), fn
	}
}

// WithBuildLease sets how long a Redis rebuild may go without making progress
// before its lease expires and another instance may start over (default 30s).
// The lease is renewed by every batch. It configures a Redis or a Fleet
// filter. It must be at least 1 ms.
func WithBuildLease(d time.Duration) Option {
	return func(c *config) {
		if !c.errs.Only("WithBuildLease", partRedis|partFleet, c.built, partNames) {
			return
		}
		if d < time.Millisecond {
			c.errs.Invalid("build lease %v must be at least 1ms", d)
			return
		}
		c.lease = d
	}
}
