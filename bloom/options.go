package bloom

import "time"

// Option configures a filter.
type Option func(*config)

type config struct {
	batch    int
	every    int64
	progress func(Progress)
	lease    time.Duration
	now      func() time.Time
}

func defaultConfig() config {
	return config{
		batch: 1000,
		lease: 30 * time.Second,
		now:   time.Now,
	}
}

func newConfig(opts []Option) config {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithBatchSize sets how many keys travel together: per script call for the
// Redis filter's batched adds and tests and its rebuild, per lock hold for a
// Local rebuild (default 1000). Values below 1 keep the default.
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.batch = n
		}
	}
}

// WithProgress makes Rebuild call fn after every `every` keys read from the
// source, and once more when the rebuild ends (Progress.Done). fn runs on the
// rebuilding goroutine; keep it short.
func WithProgress(every int, fn func(Progress)) Option {
	return func(c *config) {
		if every < 1 {
			every = 1
		}
		c.every, c.progress = int64(every), fn
	}
}

// WithBuildLease sets how long a Redis rebuild may go without making progress
// before its lease expires and another instance may start over (default 30s).
// The lease is renewed by every batch. It has no effect on a Local filter.
func WithBuildLease(d time.Duration) Option {
	return func(c *config) {
		if d >= time.Millisecond {
			c.lease = d
		}
	}
}
