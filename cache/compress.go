package cache

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

// WithCompression stores values whose encoded size is at least threshold
// bytes S2-compressed (0, the default, turns compression off). A value that
// does not shrink is stored as it is. WithMaxValueSize applies to the size
// before compression.
func WithCompression(threshold int) Option {
	return func(c *config) {
		if threshold < 0 {
			c.errs.Invalid("compression threshold %d must not be negative", threshold)
		}
		c.compressAt = threshold
	}
}
