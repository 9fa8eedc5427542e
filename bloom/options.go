package bloom

import (
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
	now      func() time.Time
	errs     option.Errors // the first invalid option
}

func defaultConfig() config {
	return config{
		batch: 1000,
		lease: 30 * time.Second,
		now:   time.Now,
		errs:  option.For(ErrInvalidOption),
	}
}

func newConfig(opts []Option) (config, error) {
	c := defaultConfig()
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
// The lease is renewed by every batch. It has no effect on a Local filter.
// It must be at least 1 ms.
func WithBuildLease(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.errs.Invalid("build lease %v must be at least 1ms", d)
			return
		}
		c.lease = d
	}
}
