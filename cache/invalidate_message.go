package cache

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
)

// The invalidation message:
//
//	offset size
//	0      2     magic 0xFE 'i'
//	2      1     format version (1)
//	3      16    source id of the publishing Cache (random per New)
//	19     8     publish time, unix nanoseconds, big endian (for the lag figure)
//	27     var   sequence number, uvarint: 1, 2, 3... per source
//	       var   key count, uvarint
//	       ...   each key: uvarint length, then its bytes (keys may hold any byte)
//
// Bytes after the last key are ignored, so a later version may append fields
// that this one skips. A message that does not decode (another version's
// layout, foreign bytes published on the channel) is counted and clears the
// local tier: its keys are unknown, so every entry may be stale.

const (
	sourceIDSize     = 16
	invalMagic0      = 0xFE
	invalMagic1      = 'i'
	invalFormat      = 1
	invalHeaderSize  = 3 + sourceIDSize + 8
	maxKeysPerInval  = 1024     // a batch of writes is split into messages of at most this many keys
	maxBytesPerInval = 64 << 10 // ... or about this many bytes
)

type invalidation struct {
	src  [sourceIDSize]byte
	sent int64 // unix nanos
	seq  uint64
	keys []string
}

func newSourceID() ([sourceIDSize]byte, error) {
	var id [sourceIDSize]byte
	_, err := rand.Read(id[:])
	return id, err
}

func encodeInvalidation(m invalidation) []byte {
	n := invalHeaderSize + 2*binary.MaxVarintLen64
	for _, k := range m.keys {
		n += binary.MaxVarintLen64 + len(k)
	}
	b := make([]byte, 0, n)
	b = append(b, invalMagic0, invalMagic1, invalFormat)
	b = append(b, m.src[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(m.sent))
	b = binary.AppendUvarint(b, m.seq)
	b = binary.AppendUvarint(b, uint64(len(m.keys)))
	for _, k := range m.keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

var errBadInvalidation = errors.New("malformed invalidation message")

func decodeInvalidation(b []byte) (m invalidation, err error) {
	if len(b) < invalHeaderSize || b[0] != invalMagic0 || b[1] != invalMagic1 || b[2] != invalFormat {
		return m, errBadInvalidation
	}
	copy(m.src[:], b[3:])
	m.sent = int64(binary.BigEndian.Uint64(b[3+sourceIDSize:]))
	b = b[invalHeaderSize:]
	var w int
	if m.seq, w = binary.Uvarint(b); w <= 0 {
		return m, errBadInvalidation
	}
	b = b[w:]
	count, w := binary.Uvarint(b)
	// Every key takes at least its length byte: a count beyond that is a lie,
	// and must not size an allocation.
	if w <= 0 || count > uint64(len(b)-w) {
		return m, errBadInvalidation
	}
	b = b[w:]
	m.keys = make([]string, 0, count)
	for range count {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return m, errBadInvalidation
		}
		m.keys = append(m.keys, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return m, nil
}
