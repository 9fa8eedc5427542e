package otel

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// server is a Redis for one test: a redis-server process of its own, or
// miniredis when redis-server is not installed. stop takes it down (an
// outage); the test's cleanup is safe after it.
type server struct {
	addr string
	stop func()
}

func startRedis(t *testing.T) server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Log("redis-server not found: using miniredis")
		m := miniredis.RunT(t)
		return server{addr: m.Addr(), stop: m.Close}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			break
		}
		if i == 200 {
			t.Fatalf("redis-server on %s did not answer", addr)
		}
		time.Sleep(10 * time.Millisecond) // waiting for a process to listen, not synchronising the test
	}
	return server{addr: addr, stop: stop}
}

func newClient(t *testing.T, s server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}
