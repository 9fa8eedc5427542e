package entry

import (
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The value stored under a cache key is an envelope (a header and the codec's
// bytes), a lease placeholder, or a version tombstone; the layouts are
// internal/wire's. Anything else under a key is foreign (another program
// wrote it, or an older format): a miss, overwritten, never decoded. An early
// refresh compares the whole header to make sure the entry it is replacing is
// the one it read.

// Kind is what the read path does with the bytes read from a cache key.
type Kind int

const (
	Foreign  Kind = iota // take the key over and load
	Envelope             // decode it
	Lease                // someone loads: wait
)

// Classify says what b, read from a cache key, is.
func Classify(b []byte) Kind {
	if wire.IsEnvelope(b) {
		return Envelope // DecodeEnvelope refuses what this reader cannot read
	}
	if _, ok := wire.ParsePlaceholder(b); ok {
		return Lease
	}
	return Foreign // a version tombstone is taken over like foreign bytes
}

// Decode decodes an envelope read from key; ok is false for anything
// else, or for a payload the codec cannot decode (reported).
func (f *Format[V]) Decode(key string, raw []byte) (Result[V], wire.Envelope, bool) {
	env, ok := wire.DecodeEnvelope(raw)
	if !ok {
		return Result[V]{}, env, false
	}
	f.rec.Size("read", len(raw))
	r := Result[V]{Null: env.Null(), Size: len(raw), NoLocal: env.Flags&(wire.FlagStale|wire.FlagRefreshing) != 0}
	if env.Tags != nil {
		r.Tagged = StampOf(env.TagInfo)
	}
	if !r.Null {
		v, err := f.decodePayload(env)
		if err != nil {
			f.rec.Report(telemetry.Undecodable, key, kind.Errorf("cacheguard: cache: decode %q: %w", key, err))
			return Result[V]{}, env, false
		}
		r.V = v
	}
	return r, env, true
}
