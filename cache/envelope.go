package cache

import (
	"encoding/binary"
	"math/rand/v2"
	"time"
)

// The value stored under a cache key is either an envelope or a lease
// placeholder. Both start with 0xFE, a byte that never occurs in UTF-8 text, and
// a second byte telling which one it is. Anything else under a key is foreign
// (another program wrote it, or an older format) and is treated as a miss and
// overwritten, never decoded.
//
// Envelope layout (big endian):
//
//	0   2  magic 0xFE 'c'
//	2   1  format version (1)
//	3   1  flags: flagNull, flagCompressed, flagStale
//	4   8  version (0 for ordinary fills; versioned writes store theirs)
//	12  8  logical expiry, Unix milliseconds
//	20  4  load time δ in milliseconds (for probabilistic early refresh)
//	24  4  fill nonce: random, so that two fills never share a header;
//	       MarkStale advances it, so no later header repeats an earlier one
//	28  …  payload: the codec's bytes (empty for a null entry)
//
// An early refresh compares the whole header to make sure the entry it is
// replacing is the one it read (see refresh.go).
//
// Because the user's bytes always follow a header, a stored "", "*" or a string
// that looks like a placeholder round-trips as a value.
const (
	magic0         = 0xFE
	magicEnvelope  = 'c'
	magicLease     = 'l'
	envelopeFormat = 1
	headerSize     = 28

	flagNull       = 1 << 0
	flagCompressed = 1 << 1
	flagStale      = 1 << 2
	flagRefreshing = 1 << 3 // an early refresh is under way
	knownFlags     = flagNull | flagCompressed | flagStale | flagRefreshing
	// readableFlags are the flags this reader implements. An entry with any
	// other flag (one from a newer writer) is a miss, reloaded and
	// overwritten: decoding it as if the flag were not there would serve
	// garbage.
	readableFlags = flagNull | flagCompressed | flagStale | flagRefreshing

	leaseTokenSize = 16
)

// envelope is the decoded header plus a view of the payload.
type envelope struct {
	flags   byte
	version uint64
	expiry  time.Time
	delta   time.Duration
	header  []byte
	payload []byte
}

func (e *envelope) null() bool { return e.flags&flagNull != 0 }

// appendEnvelope encodes header and payload into one allocation.
func appendEnvelope(dst []byte, flags byte, version uint64, expiry time.Time, delta time.Duration, payload []byte) []byte {
	dst = append(dst, magic0, magicEnvelope, envelopeFormat, flags)
	dst = binary.BigEndian.AppendUint64(dst, version)
	dst = binary.BigEndian.AppendUint64(dst, uint64(expiry.UnixMilli()))
	// Whole milliseconds, rounded up: a load faster than a millisecond
	// still took time, and a delta of 0 would turn early refresh off for
	// the entry whatever its beta.
	ms := (delta + time.Millisecond - 1).Milliseconds()
	if delta <= 0 {
		ms = 0
	}
	if ms > 1<<32-1 {
		ms = 1<<32 - 1
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(ms))
	dst = binary.BigEndian.AppendUint32(dst, rand.Uint32())
	return append(dst, payload...)
}

// kind classifies raw bytes read from a cache key.
type kind int

const (
	kindForeign kind = iota
	kindEnvelope
	kindLease
)

func classify(b []byte) kind {
	if len(b) < 2 || b[0] != magic0 {
		return kindForeign
	}
	switch b[1] {
	case magicEnvelope:
		return kindEnvelope
	case magicLease:
		// A placeholder: magic and token, then possibly the version it
		// kept (versionkeep.go) and a waiter's mark (notify.go).
		switch n := len(b); n {
		case 2 + leaseTokenSize, 2 + leaseTokenSize + 8:
			return kindLease
		case 3 + leaseTokenSize, 3 + leaseTokenSize + 8:
			if b[n-1] == waitMark[0] {
				return kindLease
			}
		}
	}
	return kindForeign
}

// decodeEnvelope parses b; ok is false for anything that is not a well-formed
// envelope of a known format.
func decodeEnvelope(b []byte) (e envelope, ok bool) {
	if len(b) < headerSize || b[0] != magic0 || b[1] != magicEnvelope || b[2] != envelopeFormat {
		return e, false
	}
	e.flags = b[3]
	if e.flags&^readableFlags != 0 {
		return e, false
	}
	e.version = binary.BigEndian.Uint64(b[4:12])
	e.expiry = time.UnixMilli(int64(binary.BigEndian.Uint64(b[12:20])))
	e.delta = time.Duration(binary.BigEndian.Uint32(b[20:24])) * time.Millisecond
	e.header = b[:headerSize]
	e.payload = b[headerSize:]
	if e.null() && len(e.payload) != 0 {
		return e, false
	}
	return e, true
}

// placeholder is the lease marker written with SET NX GET PX: the lease magic
// followed by a random token that identifies the holder.
func placeholder(token [leaseTokenSize]byte) string {
	b := make([]byte, 0, 2+leaseTokenSize)
	b = append(b, magic0, magicLease)
	b = append(b, token[:]...)
	return string(b)
}
