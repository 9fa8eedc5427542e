package entry

import (
	"fmt"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/klauspost/compress/s2"
)

// Compression. Values whose encoded size reaches the threshold set by
// WithCompression are stored S2-compressed, with the compressed flag in the
// envelope header; readers decompress whatever carries the flag, whatever
// their own setting, so instances can turn compression on one at a time.
//
// S2 (klauspost/compress) rather than zstd: on JSON rows of 2 KiB to 200 KiB
// it compressed and decompressed 3 to 5 times faster (2.1 to 3.2 times
// smaller against zstd's 2.7 to 4.9; BenchmarkCompress in benchmarks/), and
// on a cache the hit path pays the decompression on every read. It also needs
// no encoder or decoder state to share between goroutines.

// compress returns the payload to store and its flags: compressed when the
// threshold is reached and compression pays.
func (f *Format[V]) compress(payload []byte, flags byte) ([]byte, byte) {
	if f.cfg.CompressAt <= 0 || len(payload) < f.cfg.CompressAt || flags&wire.FlagNull != 0 {
		return payload, flags
	}
	z := s2.Encode(nil, payload)
	if len(z) >= len(payload) {
		return payload, flags
	}
	return z, flags | wire.FlagCompressed
}

// maxDecompressed bounds what a compressed payload may expand to when no size
// limit is set, so that foreign bytes flagged compressed cannot make a reader
// allocate without bound.
const maxDecompressed = 64 << 20

// decodePayload decompresses env's payload if it is flagged so, then decodes
// it with the codec.
func (f *Format[V]) decodePayload(env wire.Envelope) (V, error) {
	if env.Flags&wire.FlagCompressed == 0 {
		return f.codec.decode(env.Payload)
	}
	var zero V
	n, err := s2.DecodedLen(env.Payload)
	if err != nil {
		return zero, kind.Errorf("cacheguard: cache: decompress: %w", err)
	}
	limit := maxDecompressed
	if f.cfg.MaxValueSize > 0 {
		limit = f.cfg.MaxValueSize
	}
	if n > limit {
		return zero, fmt.Errorf("cacheguard: cache: decompress: %d bytes, over the limit of %d", n, limit)
	}
	b, err := s2.Decode(nil, env.Payload)
	if err != nil {
		return zero, kind.Errorf("cacheguard: cache: decompress: %w", err)
	}
	return f.codec.decode(b)
}
