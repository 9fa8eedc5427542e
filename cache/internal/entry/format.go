// Package entry is the bytes a cache writes under a key and reads back:
// a value encoded by its codec (string and []byte as they are), compressed
// past a threshold, wrapped in an envelope (internal/wire) with its
// jittered expiry, its tags and its load time; and the rule that turns
// what a GET returned into a Result, or into nothing usable (a miss).
package entry

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// Config is what a Format is made of; New checked it.
type Config[V any] struct {
	Codec        Codec
	TTL          time.Duration // before jitter
	NullTTL      time.Duration // an absence's TTL, before jitter
	Jitter       float64
	MaxValueSize int // 0 or less: no limit
	CompressAt   int // 0: no compression
	// TTLFunc chooses each value's TTL (nil: TTL for all); Tags each
	// value's tags (nil: untagged).
	TTLFunc func(key string, v V) time.Duration
	Tags    func(key string, v V) []string
}

// Format encodes and decodes one cache's entries of values of type V.
type Format[V any] struct {
	cfg   Config[V]
	codec valueCodec[V]
	rec   *telemetry.Recorder
	hooks *hook.Set
}

// New returns the format of cfg.
func New[V any](cfg Config[V], rec *telemetry.Recorder, hooks *hook.Set) *Format[V] {
	return &Format[V]{cfg: cfg, codec: newValueCodec[V](cfg.Codec), rec: rec, hooks: hooks}
}

// TTL is the TTL of values without a TTL function, before jitter.
func (f *Format[V]) TTL() time.Duration { return f.cfg.TTL }

// NullTTL is the TTL of an absence, before jitter.
func (f *Format[V]) NullTTL() time.Duration { return f.cfg.NullTTL }

// Jitter is the fraction TTLs are spread by.
func (f *Format[V]) Jitter() float64 { return f.cfg.Jitter }

// Tagged reports whether values are tagged.
func (f *Format[V]) Tagged() bool { return f.cfg.Tags != nil }

// Now is the clock of expiry decisions (the Now hook's, in tests).
func (f *Format[V]) Now() time.Time { return f.hooks.Clock() }

// Result is what a read or a fill hands its callers.
type Result[V any] struct {
	V    V
	Null bool
	Size int // encoded size, the local tier's cost
	// NoLocal keeps the result out of the local tier: its fill was refused
	// (a write raced it), or the entry is stale or being refreshed.
	NoLocal bool
	// Tagged is a tagged entry's tag section, kept by the local tier.
	Tagged *Stamp
}
