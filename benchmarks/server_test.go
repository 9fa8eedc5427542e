package benchmarks

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The benchmarks run against one real redis-server per test binary, started by
// internal/redistest on a free loopback port (run.sh starts one for all its
// passes and hands it over in childRedisEnv).

// TestMain stops the shared server at the end. When clientLogEnv names a
// file, go-redis's own log lines (a connection it found in a bad state, say)
// go there instead of to standard error: written in the middle of a
// benchmark's result line they would break it, and benchstat reads a line
// of the form "redis: ..." as a configuration key, splitting every later
// result into groups of one sample (no interval).
func TestMain(m *testing.M) {
	if path := os.Getenv(clientLogEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmarks:", err)
			os.Exit(2)
		}
		redis.SetLogger(fileLogger{log.New(f, "", log.LstdFlags)})
	}
	redistest.Main(m)
}

// clientLogEnv names the variable through which run.sh gives the file that
// collects go-redis's log lines.
const clientLogEnv = "CACHEGUARD_BENCH_CLIENT_LOG"

// fileLogger is go-redis's logger writing to a log.Logger.
type fileLogger struct{ l *log.Logger }

func (f fileLogger) Printf(_ context.Context, format string, v ...any) { f.l.Printf(format, v...) }

// childRedisEnv names the variable through which run.sh, or a parent
// benchmark, hands its server's address to the processes it starts.
const childRedisEnv = "CACHEGUARD_BENCH_REDIS"

// redisAddr returns the address of the shared redis-server, starting it on
// first use. Without redis-server the benchmark is skipped (it fails under
// CACHEGUARD_REQUIRE_REDIS=1): its figures mean nothing on miniredis.
func redisAddr(tb testing.TB) string {
	tb.Helper()
	if addr := os.Getenv(childRedisEnv); addr != "" {
		return addr
	}
	redistest.NeedServer(tb)
	return redistest.SharedSingle(tb).(*redis.Client).Options().Addr
}

// newClient returns a client for the shared server; FLUSHALL is the caller's
// business (benchmarks use their own prefixes).
func newClient(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: redisAddr(tb)})
	tb.Cleanup(func() { c.Close() })
	return c
}

// measurement skips a test that measures rather than checks unless -run
// names it: its figures depend on the machine and it takes seconds, so
// `go test ./...` leaves it out (go test -run TestIdleCPU -v . runs it).
func measurement(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a measurement; -short skips it")
	}
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() == "" {
		t.Skip("a measurement: run it by name with -run " + t.Name())
	}
}
