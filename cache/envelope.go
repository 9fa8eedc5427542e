package cache

import "github.com/cacheguard/cacheguard/internal/wire"

// The value stored under a cache key is an envelope (a header and the codec's
// bytes), a lease placeholder, or a version tombstone; the layouts are
// internal/wire's. Anything else under a key is foreign (another program
// wrote it, or an older format): a miss, overwritten, never decoded. An early
// refresh compares the whole header to make sure the entry it is replacing is
// the one it read (see refresh.go).

// envelope is a decoded header plus a view of the payload.
type envelope = wire.Envelope

func decodeEnvelope(b []byte) (envelope, bool) { return wire.DecodeEnvelope(b) }

// kind is what the read path does with the bytes read from a cache key.
type kind int

const (
	kindForeign  kind = iota // take the key over and load
	kindEnvelope             // decode it
	kindLease                // someone loads: wait
)

func classify(b []byte) kind {
	if wire.IsEnvelope(b) {
		return kindEnvelope // decodeEnvelope refuses what this reader cannot read
	}
	if _, ok := wire.ParsePlaceholder(b); ok {
		return kindLease
	}
	return kindForeign // a version tombstone is taken over like foreign bytes (swapScript)
}

// isVersionTombstone reports whether b is a version tombstone (a miss to
// readers, not foreign data).
func isVersionTombstone(b []byte) bool { return wire.IsTombstone(b) }
