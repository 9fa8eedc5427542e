package stock

import (
	"log/slog"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
)

// MaxIDLen bounds SKUs, user ids and request ids (bytes). It keeps Redis
// fields and database keys small enough to index (VARCHAR(128)).
const MaxIDLen = 128

// DefaultPrefix starts every Redis key of an Inventory and an Admission
// (see WithPrefix).
const DefaultPrefix = "cacheguard:stock:"

// Option configures an Inventory (New), a Consumer (NewConsumer) or an
// Admission (NewAdmission). Each option's comment says what it configures;
// WithLogger configures all three, WithPrefix an Inventory and an
// Admission. An option given to a constructor of something it does not
// configure makes the constructor return an error wrapping ErrInvalidOption.
// A nil Option is ignored.
type Option func(*options)

// options is what a constructor's options set: one part of it is read, the
// part of what is being built.
type options struct {
	of     part // what is being built
	report option.Reporter
	inv    config
	con    consumerConfig
	adm    admissionConfig
	errs   option.Errors // the first invalid option
}

// part names what an option configures, as a set.
type part = option.Part

const (
	inventoryPart part = 1 << iota
	consumerPart
	admissionPart
)

// partNames names the parts in refusals: "an Inventory or a Consumer".
var partNames = option.PartNames{{inventoryPart, "an Inventory"}, {consumerPart, "a Consumer"}, {admissionPart, "an Admission"}}

// apply returns the options opts set for what of is, or the first error.
func apply(of part, opts []Option) (options, error) {
	o := options{of: of, report: option.NewReporter(nil, nil), errs: option.For(ErrInvalidOption)}
	switch of {
	case inventoryPart:
		o.inv = defaultConfig()
	case consumerPart:
		o.con = defaultConsumerConfig()
	case admissionPart:
		o.adm = defaultAdmissionConfig()
	}
	option.Apply(&o, opts)
	return o, o.errs.Err()
}

// configures is the Option named name, which configures parts with set:
// given to the constructor of another part, it records an error instead.
func configures(name string, parts part, set func(o *options)) Option {
	return func(o *options) {
		if o.errs.Only(name, parts, o.of, partNames) {
			set(o)
		}
	}
}

// config is an Inventory's.
type config struct {
	ns         string
	buckets    int
	perUser    int64
	holdFor    time.Duration
	soldOutTTL time.Duration
	maxOutbox  int64
}

func defaultConfig() config {
	return config{
		ns:      DefaultPrefix,
		buckets: 1,
		perUser: 1,
		holdFor: 15 * time.Minute,
	}
}

// WithLogger sets where problems no caller sees are logged (an Inventory, a
// Consumer and an Admission). The default, and what a nil logger stands
// for, is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.report.Logger = option.Logger(l) }
}

// WithErrorHandler hands fn every error WithLogger logs (a consumer pass, a
// lost Redis under admission limits, a name not given back), after it is
// logged: for metrics or alerts. fn must return quickly.
func WithErrorHandler(fn func(error)) Option {
	return func(o *options) { o.report.Handler = fn }
}

// WithPrefix sets the prefix every Redis key of an Inventory or an
// Admission starts with, its separator included (DefaultPrefix,
// "cacheguard:stock:", by default); it must end with ':', so that no two
// prefixes make the same keys. Every instance of one sale must use the
// same.
func WithPrefix(prefix string) Option {
	return configures("WithPrefix", inventoryPart|admissionPart, func(o *options) {
		if !strings.HasSuffix(prefix, ":") || len(prefix) > MaxIDLen || hasBrace(prefix) {
			o.errs.Invalid("prefix %q: end it with ':', keep it under %d bytes, without braces", prefix, MaxIDLen)
			return
		}
		o.inv.ns, o.adm.ns = prefix, prefix
	})
}

// WithBuckets spreads each SKU's stock over n buckets, each under its own hash
// tag, so that the slots of a Redis Cluster share a hot SKU. It must match
// the value the sale was loaded with. The default is 1.
func WithBuckets(n int) Option {
	return configures("WithBuckets", inventoryPart, func(o *options) {
		if n < 1 || n > 1024 {
			o.errs.Invalid("buckets %d (want 1..1024)", n)
		}
		o.inv.buckets = n
	})
}

// WithPerUserLimit sets how many units one user may hold in a sale (reserved
// plus confirmed; released units no longer count). It is written into the
// sale by Load, so every process enforces the same limit. The default is 1.
func WithPerUserLimit(n int64) Option {
	return configures("WithPerUserLimit", inventoryPart, func(o *options) {
		if n < 1 || n > MaxQty {
			o.errs.Invalid("per-user limit %d (1 to %d)", n, MaxQty)
		}
		o.inv.perUser = n
	})
}

// WithHoldFor sets how long a reservation waits for Confirm before its stock
// returns to the sale (written into the sale by Load). 0 keeps reservations
// until released. The default is 15 minutes.
func WithHoldFor(d time.Duration) Option {
	return configures("WithHoldFor", inventoryPart, func(o *options) {
		if d < 0 {
			o.errs.Invalid("hold %v", d)
		}
		o.inv.holdFor = d
	})
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
	return configures("WithLocalSoldOut", inventoryPart, func(o *options) {
		if d < 0 {
			o.errs.Invalid("local sold-out memory %v", d)
		}
		o.inv.soldOutTTL = d
	})
}

// WithOutboxMaxLen caps each outbox stream at about n entries (XADD MAXLEN ~).
// Entries not yet consumed are never trimmed by the package otherwise, so the
// cap is a guard against a consumer that never runs; 0 (the default) means
// no cap, which is what guarantees that no message is lost.
func WithOutboxMaxLen(n int64) Option {
	return configures("WithOutboxMaxLen", inventoryPart, func(o *options) {
		if n < 0 {
			o.errs.Invalid("outbox max length %d", n)
		}
		o.inv.maxOutbox = n
	})
}
