module github.com/cacheguard/cacheguard/consistency/binlog

go 1.26.0

require (
	github.com/cacheguard/cacheguard v0.1.0
	github.com/go-mysql-org/go-mysql v1.16.0
	github.com/pingcap/tidb/pkg/parser v0.0.0-20260504140133-511dba1dbe17
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/dgraph-io/ristretto/v2 v2.4.2 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/goccy/go-json v0.10.6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/maypok86/otter/v2 v2.4.0 // indirect
	github.com/pingcap/errors v0.11.5-0.20260310054046-9c8b3586e4b2 // indirect
	github.com/pingcap/failpoint v0.0.0-20260406204437-bbc9d102c19e // indirect
	github.com/pingcap/log v1.1.1-0.20260227082333-572e590d08f1 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.36.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/cacheguard/cacheguard => ../..
