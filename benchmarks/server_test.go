package benchmarks

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The benchmarks run against one real redis-server per test binary, spawned on
// a free loopback port (internal/redistest cannot be imported across modules).

var server struct {
	once sync.Once
	addr string
	cmd  *exec.Cmd
	dir  string
	err  error
}

// TestMain stops the shared server at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if server.cmd != nil {
		server.cmd.Process.Kill()
		server.cmd.Wait()
		os.RemoveAll(server.dir)
	}
	os.Exit(code)
}

// childRedisEnv names the variable through which a parent benchmark hands
// its server's address to the processes it starts.
const childRedisEnv = "CACHEGUARD_BENCH_REDIS"

// redisAddr returns the address of the shared redis-server, starting it on
// first use. It fails the benchmark when redis-server is missing.
func redisAddr(tb testing.TB) string {
	tb.Helper()
	server.once.Do(func() {
		// A child process (see stampede_test.go) uses its parent's server.
		if addr := os.Getenv(childRedisEnv); addr != "" {
			server.addr = addr
			return
		}
		server.addr, server.cmd, server.dir, server.err = spawnRedis()
	})
	if server.err != nil {
		tb.Fatalf("redis-server: %v", server.err)
	}
	return server.addr
}

// newClient returns a client for the shared server; FLUSHALL is the caller's
// business (benchmarks use their own prefixes).
func newClient(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: redisAddr(tb)})
	tb.Cleanup(func() { c.Close() })
	return c
}

func spawnRedis() (string, *exec.Cmd, string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "bench-redis")
	if err != nil {
		return "", nil, "", err
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		return "", nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr, cmd, dir, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return "", nil, "", err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
