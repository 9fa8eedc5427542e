module github.com/cacheguard/cacheguard/codec/msgpack

go 1.26.0

replace github.com/cacheguard/cacheguard => ../../

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/cacheguard/cacheguard v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgraph-io/ristretto/v2 v2.4.2 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
