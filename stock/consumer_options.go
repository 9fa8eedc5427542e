package stock

import (
	"fmt"
	"log/slog"
	"os"
	"time"
)

// ConsumerOption configures a Consumer.
type ConsumerOption func(*consumerConfig)

type consumerConfig struct {
	group      string
	name       string
	batch      int
	claimIdle  time.Duration
	maxDeliver int64
	poll       time.Duration
	parkAlert  time.Duration
	opTimeout  time.Duration
	logger     *slog.Logger
	hooks      consumerHooks
	err        error
}

// consumerHooks are interleaving points for tests; nil in production.
type consumerHooks struct {
	// afterRead runs with the entries just read or claimed, before any is
	// applied; an error ends the pass there, as a crash would.
	afterRead func(ids []string) error
}

func defaultConsumerConfig() consumerConfig {
	host, _ := os.Hostname()
	return consumerConfig{
		group:      "stock",
		name:       fmt.Sprintf("%s-%d-%s", host, os.Getpid(), newID()[:6]),
		batch:      100,
		claimIdle:  30 * time.Second,
		maxDeliver: 5,
		poll:       50 * time.Millisecond,
		parkAlert:  time.Minute,
		opTimeout:  5 * time.Second,
		logger:     slog.Default(),
	}
}

func (c *consumerConfig) invalid(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
	}
}

// WithGroup names the consumer group ("stock" by default). Consumers of one
// group share the work; each group sees every entry.
func WithGroup(name string) ConsumerOption {
	return func(c *consumerConfig) {
		if err := checkID(name, ErrInvalidOption, "group"); err != nil && c.err == nil {
			c.err = err
		}
		c.group = name
	}
}

// WithConsumerName names this consumer within its group (default: host,
// pid and a random suffix). A process restarted under the same name gets
// its own pending entries back at once; under a new name, after ClaimIdle.
func WithConsumerName(name string) ConsumerOption {
	return func(c *consumerConfig) {
		if err := checkID(name, ErrInvalidOption, "consumer name"); err != nil && c.err == nil {
			c.err = err
		}
		c.name = name
	}
}

// WithBatch sets how many entries one read or claim takes (default 100).
func WithBatch(n int) ConsumerOption {
	return func(c *consumerConfig) {
		if n < 1 {
			c.invalid("batch %d", n)
		}
		c.batch = n
	}
}

// WithClaimIdle sets how long an entry stays pending with a consumer that
// does not acknowledge it before another consumer claims it (XAUTOCLAIM).
// It must exceed the longest Apply; 0 claims at once (one consumer only).
// The default is 30 s.
func WithClaimIdle(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) {
		if d < 0 {
			c.invalid("claim idle %v", d)
		}
		c.claimIdle = d
	}
}

// WithMaxDeliveries sets after how many failures of its own an entry goes to
// the dead-letter stream (default 5). Only the sink's failures count, and
// only those while the sink accepts other entries: a failure counts when
// another entry was applied after this one first failed and no entry has
// failed for the first time since. The first failure therefore never
// counts, deliveries caused by crashes and claims never count, and during a
// database outage (every entry fails, new ones too) every entry stays
// pending, whatever WithClaimIdle: none is dead-lettered.
func WithMaxDeliveries(n int) ConsumerOption {
	return func(c *consumerConfig) {
		if n < 1 {
			c.invalid("max deliveries %d", n)
		}
		c.maxDeliver = int64(n)
	}
}

// WithPollInterval sets how long an idle consumer waits between passes
// (default 50 ms).
func WithPollInterval(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) {
		if d <= 0 {
			c.invalid("poll interval %v", d)
		}
		c.poll = d
	}
}

// WithParkAlert sets how long a release or confirm may wait in the database
// for its reservation before the consumer counts an alert and logs it
// (default 1 minute). It needs a Sink with a Parked method (SQLStore has one).
func WithParkAlert(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) {
		if d <= 0 {
			c.invalid("park alert %v", d)
		}
		c.parkAlert = d
	}
}

// WithOpTimeout bounds each Redis call and each Apply (default 5 s).
func WithOpTimeout(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) {
		if d <= 0 {
			c.invalid("op timeout %v", d)
		}
		c.opTimeout = d
	}
}

// WithConsumerLogger sets where the consumer logs (default slog.Default()).
func WithConsumerLogger(l *slog.Logger) ConsumerOption {
	return func(c *consumerConfig) {
		if l == nil {
			c.invalid("nil logger")
		}
		c.logger = l
	}
}

func withConsumerHooks(h consumerHooks) ConsumerOption {
	return func(c *consumerConfig) { c.hooks = h }
}
