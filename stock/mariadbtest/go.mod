module github.com/cacheguard/cacheguard/stock/mariadbtest

go 1.26.0

replace (
	github.com/cacheguard/cacheguard => ../..
	github.com/cacheguard/cacheguard/stock => ../
)

require (
	github.com/cacheguard/cacheguard v0.1.0
	github.com/cacheguard/cacheguard/stock v0.1.0
	github.com/go-sql-driver/mysql v1.10.1
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-redis/redis_rate/v10 v10.0.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
