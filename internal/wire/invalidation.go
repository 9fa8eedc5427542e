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
// Bytes after the last key are ignored, so a later version may append fields
// that this one skips.
const (
	MagicInvalidation      = 'i'
	InvalidationFormat     = 1
	SourceIDSize           = 16
	InvalidationHeaderSize = 3 + SourceIDSize + 8
)

// Invalidation is a decoded invalidation message.
type Invalidation struct {
	Source [SourceIDSize]byte
	Sent   int64 // unix nanos
	Seq    uint64
	Keys   []string
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
	b := make([]byte, 0, n)
	b = append(b, Magic, MagicInvalidation, InvalidationFormat)
	b = append(b, m.Source[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Sent))
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

// DecodeInvalidation parses an invalidation message.
func DecodeInvalidation(b []byte) (m Invalidation, err error) {
	if len(b) < InvalidationHeaderSize || b[0] != Magic || b[1] != MagicInvalidation || b[2] != InvalidationFormat {
		return m, ErrBadInvalidation
	}
	copy(m.Source[:], b[3:])
	m.Sent = int64(binary.BigEndian.Uint64(b[3+SourceIDSize:]))
	b = b[InvalidationHeaderSize:]
	var w int
	if m.Seq, w = binary.Uvarint(b); w <= 0 {
		return m, ErrBadInvalidation
	}
	b = b[w:]
	count, w := binary.Uvarint(b)
	// Every key takes at least its length byte: a count beyond that is a lie,
	// and must not size an allocation.
	if w <= 0 || count > uint64(len(b)-w) {
		return m, ErrBadInvalidation
	}
	b = b[w:]
	m.Keys = make([]string, 0, count)
	for range count {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return m, ErrBadInvalidation
		}
		m.Keys = append(m.Keys, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return m, nil
}
