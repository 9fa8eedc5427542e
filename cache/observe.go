package cache

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// Tier says which part of the read path answered a Get or GetMany.
type Tier uint8

const (
	TierNone   = Tier(telemetry.TierNone)   // nothing answered: a Bloom filter rejection, or an error before any tier
	TierLocal  = Tier(telemetry.TierLocal)  // the in-process tier
	TierRedis  = Tier(telemetry.TierRedis)  // an entry read from Redis
	TierFill   = Tier(telemetry.TierFill)   // a fill run by another caller: coalesced in this process, or a lease wait across processes
	TierLoader = Tier(telemetry.TierLoader) // this call's own loader (a fill, or a fallback load while Redis was down)
)

func (t Tier) String() string {
	switch t {
	case TierLocal:
		return "local"
	case TierRedis:
		return "redis"
	case TierFill:
		return "fill"
	case TierLoader:
		return "loader"
	}
	return "none"
}

// GetInfo describes a finished Get or GetMany to an Observer.
type GetInfo struct {
	// Tier is the deepest tier the call reached; for GetMany, over all keys.
	Tier Tier
	// Coalesced: the call's fill was shared with other callers in this
	// process (Get only). With Tier TierFill it waited for another caller's
	// loader; with TierLoader others waited for its own.
	Coalesced bool
	// LeaseWaited: the call's fill found another holder's lease (another
	// process, or an earlier caller of this one) and waited for it;
	// LeaseWait is how long, from the first refusal to the attempt that
	// ended the wait (it found the filled value, took the lease over, or
	// gave up). A coalesced caller reports the wait of the fill it shared
	// only if it ran that fill itself.
	LeaseWaited bool
	LeaseWait   time.Duration
	// EarlyRefresh: the call served a value and started a background
	// refresh of it ahead of its expiry (XFetch, or stale-while-revalidate).
	EarlyRefresh bool
	// SoftTimeout: the call returned a stale value because the reload it
	// waited for outlasted WithSoftLoadTimeout; the reload went on in the
	// background. LoadTimeout: a load of the call was stopped by
	// WithLoadTimeout (the hard limit).
	SoftTimeout bool
	LoadTimeout bool
	Err         error // what the call returned (ErrNotFound included)
}

// Observer sees every Get and GetMany of a Cache, to build traces from (the
// otel module turns them into OpenTelemetry spans). Counters are not its job:
// Stats has them, read without any per-call cost.
//
// A panicking Observer does not fail the call: the panic is recovered,
// counted in Stats.ObserverPanics and passed to the error handler
// (WithErrorHandler), and the call goes on unobserved from that point.
//
// If the Observer also implements ValueSizeObserver it is told the size of
// every entry read from or written to Redis.
//
// StartGet is called when a call begins (op is "Get" or "GetMany"); the
// context it returns is the one the call goes on with, and end is called
// once when the call returns. StartLoad wraps each call of the caller's
// loader the same way: its context is derived from the Get's, so a span
// started there is a child of the Get's span. Both run on the caller's
// goroutine (StartLoad on the fill's) and must be safe for concurrent use.
type Observer interface {
	StartGet(ctx context.Context, op string, keys []string) (context.Context, func(GetInfo))
	StartLoad(ctx context.Context, keys []string) (context.Context, func(error))
}

// ValueSizeObserver is an optional extension of Observer: ValueSize is called
// with op "read" and the encoded size in bytes (header and compression
// included) of every entry decoded from Redis, and with op "write" for every
// entry encoded to be written. It runs on the caller's goroutine, inside the
// read or write path: it must be quick and safe for concurrent use.
type ValueSizeObserver interface {
	ValueSize(op string, bytes int)
}
