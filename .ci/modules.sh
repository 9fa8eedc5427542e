# shellcheck shell=bash
# The modules of go.work besides the core (the root), read by .ci/run and
# .ci/stress. Each keeps what it needs out of the core's go.mod: examples
# (SQLite), stock (redis_rate, x/time), its MariaDB tests (the MySQL
# driver), the binlog adapter (go-mysql), OpenTelemetry, the MessagePack
# codec, the fleet-wide key rate limiter (redis_rate), and the benchmarks
# (the libraries they compare against; vetted and run once by .ci/run, not
# a test suite). In a directory of go.work, ./... stays inside that
# directory's module, so each module's tests run once.
modules=(examples stock stock/mariadbtest consistency/binlog otel codec/msgpack ratelimit)

# The modules a release versions and tags together (the root as vX.Y.Z, the
# others as <dir>/vX.Y.Z; .ci/release), which .ci/consumer installs from
# outside the repository. The others (examples, stock/mariadbtest,
# benchmarks) require them at the same version but are not published.
released=(. stock ratelimit otel codec/msgpack consistency/binlog)
