package wire

import (
	"encoding/binary"
	"errors"
)

// An invalidation message, published on a cache's invalidation channel
// (InvalidationChannelPrefix + the cache's prefix) to drop keys from the
// local tiers of the other instances:
//
//	offset size
//	0      2     Magic MagicInvalidation
//	2      1     format version (InvalidationFormat)
//	3      16    source id of the publishing Cache (random per New)
//	19     8     publish time, unix nanoseconds, big endian (for the lag figure)
//	27     var   sequence number, uvarint: 1, 2, 3... per source
//	       var   key count, uvarint
//	       ...   each key: uvarint length, then its bytes (keys may hold any byte)
//
// A message that invalidates tags (tags.go) has format version
// InvalidationTagsFormat and goes on, after its keys, with a tag section:
//
//	var   invalidation time, Unix milliseconds, uvarint
//	var   tag count (at least 1), uvarint
//	...   each tag: uvarint length, then its bytes
//
// so that a reader that knows no tags refuses it, and clears its local tier
// as for any message it cannot read, rather than miss the tags. Bytes after
// the last key (format 1) or the last tag (format 2) are ignored, so a later
// version may append fields that this one skips.
const (
	MagicInvalidation      = 'i'
	InvalidationFormat     = 1
	InvalidationTagsFormat = 2
	SourceIDSize           = 16
	InvalidationHeaderSize = 3 + SourceIDSize + 8
)

// Invalidation is a decoded invalidation message.
type Invalidation struct {
	Source [SourceIDSize]byte
	Sent   int64 // unix nanos
	Seq    uint64
	Keys   []string

	TagTime int64 // Unix ms: when Tags were invalidated
	Tags    []string
}

// ErrBadInvalidation is returned for bytes that are not an invalidation
// message of a known format.
var ErrBadInvalidation = errors.New("malformed invalidation message")

// EncodeInvalidation encodes m in one allocation.
func EncodeInvalidation(m Invalidation) []byte {
	n := InvalidationHeaderSize + 2*binary.MaxVarintLen64
	for _, k := range m.Keys {
		n += binary.MaxVarintLen64 + len(k)
	}
	if len(m.Tags) > 0 {
		n += 2 * binary.MaxVarintLen64
		for _, t := range m.Tags {
			n += binary.MaxVarintLen64 + len(t)
		}
	}
	b := make([]byte, 0, n)
	format := byte(InvalidationFormat)
	if len(m.Tags) > 0 {
		format = InvalidationTagsFormat
	}
	b = append(b, Magic, MagicInvalidation, format)
	b = append(b, m.Source[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Sent))
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	b = appendStrings(b, m.Keys)
	if len(m.Tags) > 0 {
		b = binary.AppendUvarint(b, uint64(m.TagTime))
		b = binary.AppendUvarint(b, uint64(len(m.Tags)))
		b = appendStrings(b, m.Tags)
	}
	return b
}

func appendStrings(b []byte, ss []string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// DecodeInvalidation parses an invalidation message.
func DecodeInvalidation(b []byte) (m Invalidation, err error) {
	if len(b) < InvalidationHeaderSize || b[0] != Magic || b[1] != MagicInvalidation ||
		(b[2] != InvalidationFormat && b[2] != InvalidationTagsFormat) {
		return m, ErrBadInvalidation
	}
	tagged := b[2] == InvalidationTagsFormat
	copy(m.Source[:], b[3:])
	m.Sent = int64(binary.BigEndian.Uint64(b[3+SourceIDSize:]))
	b = b[InvalidationHeaderSize:]
	var w int
	if m.Seq, w = binary.Uvarint(b); w <= 0 {
		return m, ErrBadInvalidation
	}
	b = b[w:]
	if m.Keys, b, err = readStrings(b); err != nil || !tagged {
		return m, err
	}
	t, w := binary.Uvarint(b)
	if w <= 0 || t >= 1<<62 {
		return m, ErrBadInvalidation
	}
	m.TagTime = int64(t)
	if m.Tags, _, err = readStrings(b[w:]); err == nil && len(m.Tags) == 0 {
		err = ErrBadInvalidation // a tag section names at least one tag
	}
	return m, err
}

// readStrings reads a uvarint count and that many length-prefixed strings.
func readStrings(b []byte) ([]string, []byte, error) {
	count, w := binary.Uvarint(b)
	// Every string takes at least its length byte: a count beyond that is a
	// lie, and must not size an allocation.
	if w <= 0 || count > uint64(len(b)-w) {
		return nil, nil, ErrBadInvalidation
	}
	b = b[w:]
	ss := make([]string, 0, count)
	for range count {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return nil, nil, ErrBadInvalidation
		}
		ss = append(ss, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return ss, b, nil
}
