module github.com/cacheguard/cacheguard

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/anishathalye/porcupine v1.3.1
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/klauspost/compress v1.20.3
	github.com/maypok86/otter/v2 v2.4.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/sync v0.24.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
