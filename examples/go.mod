module github.com/cacheguard/cacheguard/examples

go 1.26.0

replace (
	github.com/cacheguard/cacheguard => ../
	github.com/cacheguard/cacheguard/stock => ../stock
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/cacheguard/cacheguard v0.1.0
	github.com/cacheguard/cacheguard/stock v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	modernc.org/sqlite v1.61.1
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/bits-and-blooms/bloom/v3 v3.7.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgraph-io/ristretto/v2 v2.4.2 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/go-redis/redis_rate/v10 v10.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	modernc.org/libc v1.79.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
