package cache

import (
	"crypto/rand"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// The invalidation message is wire.Invalidation. A message that does not
// decode (another version's layout, foreign bytes published on the channel)
// is counted and clears the local tier: its keys are unknown, so every entry
// may be stale.

const (
	sourceIDSize     = wire.SourceIDSize
	maxKeysPerInval  = 1024     // a batch of writes is split into messages of at most this many keys
	maxBytesPerInval = 64 << 10 // ... or about this many bytes
)

type invalidation struct {
	src  [sourceIDSize]byte
	sent int64 // unix nanos
	seq  uint64
	keys []string

	tagTime int64 // Unix ms
	tags    []string
}

func newSourceID() ([sourceIDSize]byte, error) {
	var id [sourceIDSize]byte
	_, err := rand.Read(id[:])
	return id, err
}

func encodeInvalidation(m invalidation) []byte {
	return wire.EncodeInvalidation(wire.Invalidation{Source: m.src, Sent: m.sent, Seq: m.seq, Keys: m.keys})
}

func decodeInvalidation(b []byte) (invalidation, error) {
	m, err := wire.DecodeInvalidation(b)
	return invalidation{src: m.Source, sent: m.Sent, seq: m.Seq, keys: m.Keys, tagTime: m.TagTime, tags: m.Tags}, err
}
