package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"time"
)

// Every value cacheguard writes under a cache key starts with Magic, a byte
// that never occurs in UTF-8 text, and a second byte telling which shape it
// is: MagicEnvelope, MagicLease or MagicTombstone. Anything else is foreign
// (another program wrote it, or an older format): a miss, overwritten, never
// decoded.
//
// Envelope layout (big endian):
//
//	0   2  Magic MagicEnvelope
//	2   1  format version (EnvelopeFormat)
//	3   1  flags: FlagNull, FlagCompressed, FlagStale, FlagRefreshing,
//	       FlagTagged (a tag section follows the header: tags.go),
//	       FlagTagSeen (its tags carry seen times: tags.go)
//	4   8  version (0 for ordinary fills; versioned writes store theirs)
//	12  8  logical expiry, Unix milliseconds
//	20  4  load time δ in milliseconds (for probabilistic early refresh)
//	24  4  fill nonce: random, so that two fills never share a header;
//	       MarkStale advances it, so no later header repeats an earlier one
//	28  …  payload: the codec's bytes (empty for a null entry)
//
// Because the user's bytes always follow a header, a stored "", "*" or a
// string that looks like a placeholder round-trips as a value.
const (
	Magic          = 0xFE
	MagicEnvelope  = 'c'
	MagicLease     = 'l'
	MagicTombstone = 'v'

	EnvelopeFormat = 1

	FormatOffset  = 2
	FlagsOffset   = 3
	VersionOffset = 4
	ExpiryOffset  = 12
	DeltaOffset   = 20
	NonceOffset   = 24
	HeaderSize    = 28

	VersionSize = 8
	NonceSize   = 4
)

// Envelope flags.
const (
	FlagNull       = 1 << 0 // a cached absence: no payload
	FlagCompressed = 1 << 1 // the payload is S2-compressed
	FlagStale      = 1 << 2 // MarkStale: serve while one caller reloads
	FlagRefreshing = 1 << 3 // an early refresh or a stale reload is under way

	// ReadableFlags are the flags this reader implements. An entry with any
	// other flag (one from a newer writer) is a miss, reloaded and
	// overwritten: decoding it as if the flag were not there would serve
	// garbage.
	ReadableFlags = FlagNull | FlagCompressed | FlagStale | FlagRefreshing | FlagTagged | FlagTagSeen
)

// Envelope is a decoded header plus a view of the payload.
type Envelope struct {
	Flags   byte
	Version uint64
	Expiry  time.Time
	Delta   time.Duration
	Header  []byte // the whole header, the entry's generation for compare-and-set
	Payload []byte

	// Of a tagged envelope (FlagTagged): its tag section (tags.go).
	TagInfo
}

// Null reports a cached absence.
func (e *Envelope) Null() bool { return e.Flags&FlagNull != 0 }

// AppendEnvelope encodes header and payload after dst.
func AppendEnvelope(dst []byte, flags byte, version uint64, expiry time.Time, delta time.Duration, payload []byte) []byte {
	dst = append(dst, Magic, MagicEnvelope, EnvelopeFormat, flags)
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

// IsEnvelope reports whether b starts like an envelope of a known format
// (at least a whole header). It does not check the flags.
func IsEnvelope(b []byte) bool {
	return len(b) >= HeaderSize && b[0] == Magic && b[1] == MagicEnvelope && b[FormatOffset] == EnvelopeFormat
}

// DecodeEnvelope parses b; ok is false for anything that is not a well-formed
// envelope of a known format with flags this reader implements.
func DecodeEnvelope(b []byte) (e Envelope, ok bool) {
	if !IsEnvelope(b) {
		return e, false
	}
	e.Flags = b[FlagsOffset]
	if e.Flags&^ReadableFlags != 0 {
		return e, false
	}
	e.Version = binary.BigEndian.Uint64(b[VersionOffset:ExpiryOffset])
	e.Expiry = time.UnixMilli(int64(binary.BigEndian.Uint64(b[ExpiryOffset:DeltaOffset])))
	e.Delta = time.Duration(binary.BigEndian.Uint32(b[DeltaOffset:NonceOffset])) * time.Millisecond
	e.Header = b[:HeaderSize]
	e.Payload = b[HeaderSize:]
	switch {
	case e.Flags&FlagTagged != 0:
		if e.TagInfo, e.Payload, ok = parseTagSection(e.Payload, e.Flags&FlagTagSeen != 0); !ok {
			return e, false
		}
	case e.Flags&FlagTagSeen != 0:
		return e, false // seen times without a tag section
	}
	if e.Null() && len(e.Payload) != 0 {
		return e, false
	}
	return e, true
}

// Header is what a reader of only the first HeaderSize bytes of an envelope
// (GETRANGE) learns: its flags, version and logical expiry.
type Header struct {
	Flags   byte
	Version uint64
	Expiry  time.Time // zero when the stored expiry is out of range
}

// ParseHeader parses the first bytes of a value (at least HeaderSize of them
// for an envelope); ok is false for anything that is not an envelope of a
// known format. Unknown flags are reported, not refused.
func ParseHeader(head []byte) (h Header, ok bool) {
	if !IsEnvelope(head) {
		return h, false
	}
	h.Flags = head[FlagsOffset]
	h.Version = binary.BigEndian.Uint64(head[VersionOffset:ExpiryOffset])
	if ms := binary.BigEndian.Uint64(head[ExpiryOffset:DeltaOffset]); ms < 1<<62 {
		h.Expiry = time.UnixMilli(int64(ms))
	}
	return h, true
}
