package stock

import (
	"fmt"
	"os"
	"time"
)

type consumerConfig struct {
	group      string
	name       string
	batch      int
	claimIdle  time.Duration
	maxDeliver int64
	poll       time.Duration
	parkAlert  time.Duration
	timeout    time.Duration
	hooks      consumerHooks
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
		timeout:    5 * time.Second,
	}
}

// WithGroup names a Consumer's group ("stock" by default). Consumers of one
// group share the work; each group sees every entry.
func WithGroup(name string) Option {
	return configures("WithGroup", consumerPart, func(o *options) {
		o.errs.Add(checkID(name, ErrInvalidOption, "group"))
		o.con.group = name
	})
}

// WithConsumerName names a Consumer within its group (default: host,
// pid and a random suffix). A process restarted under the same name gets
// its own pending entries back at once (after Close; after a crash, once
// the name's lease, ClaimIdle or at least 5 s, has run out); under a new
// name, after ClaimIdle. One live consumer goes by a name at a time: a
// second one started under a name another live consumer holds (a name from
// a configuration every instance reads) takes a name of its own, logs it
// and counts it in ConsumerStats.NameConflicts.
func WithConsumerName(name string) Option {
	return configures("WithConsumerName", consumerPart, func(o *options) {
		o.errs.Add(checkID(name, ErrInvalidOption, "consumer name"))
		o.con.name = name
	})
}

// WithBatchSize sets how many entries a Consumer's read or claim takes
// (default 100).
func WithBatchSize(n int) Option {
	return configures("WithBatchSize", consumerPart, func(o *options) {
		if n < 1 {
			o.errs.Invalid("batch size %d", n)
		}
		o.con.batch = n
	})
}

// WithClaimIdle sets how long an entry stays pending with a Consumer that
// does not acknowledge it before another consumer claims it (XAUTOCLAIM).
// A consumer renews the entries of a batch it is working through every half
// ClaimIdle, whatever the batch size, so it must exceed twice the longest
// single Apply; 0 claims at once (one consumer only). The default is 30 s.
func WithClaimIdle(d time.Duration) Option {
	return configures("WithClaimIdle", consumerPart, func(o *options) {
		if d < 0 {
			o.errs.Invalid("claim idle %v", d)
		}
		o.con.claimIdle = d
	})
}

// WithMaxDeliveries sets after how many failures of its own an entry goes to
// the dead-letter stream (default 5). Only the sink's failures count, and
// only those while the sink accepts other entries: a failure counts when
// another entry was applied after this one first failed and no entry has
// failed for the first time since. The first failure therefore never
// counts, deliveries caused by crashes and claims never count, and during a
// database outage (every entry fails, new ones too) every entry stays
// pending, whatever WithClaimIdle: none is dead-lettered.
func WithMaxDeliveries(n int) Option {
	return configures("WithMaxDeliveries", consumerPart, func(o *options) {
		if n < 1 {
			o.errs.Invalid("max deliveries %d", n)
		}
		o.con.maxDeliver = int64(n)
	})
}

// WithPollInterval sets how long an idle Consumer waits between passes
// (default 50 ms).
func WithPollInterval(d time.Duration) Option {
	return configures("WithPollInterval", consumerPart, func(o *options) {
		if d <= 0 {
			o.errs.Invalid("poll interval %v", d)
		}
		o.con.poll = d
	})
}

// WithParkAlert sets how long a release or confirm may wait in the database
// for its reservation before a Consumer counts an alert and logs it
// (default 1 minute). It needs a Sink with a Parked method (SQLStore has one).
func WithParkAlert(d time.Duration) Option {
	return configures("WithParkAlert", consumerPart, func(o *options) {
		if d <= 0 {
			o.errs.Invalid("park alert %v", d)
		}
		o.con.parkAlert = d
	})
}

// WithTimeout bounds each Redis call and each Apply of a Consumer (default
// 5 s).
func WithTimeout(d time.Duration) Option {
	return configures("WithTimeout", consumerPart, func(o *options) {
		if d <= 0 {
			o.errs.Invalid("timeout %v", d)
		}
		o.con.timeout = d
	})
}

func withConsumerHooks(h consumerHooks) Option {
	return configures("withConsumerHooks", consumerPart, func(o *options) { o.con.hooks = h })
}
