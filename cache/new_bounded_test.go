package cache

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A generation sync against a server that accepts connections and never
// answers (New's first one included, which runs with no context of the
// caller's) ends by WithInvalidationHealthCheck's timeout, not by the
// client's own read timeout (3 s by default), which a Background context
// left in charge.
func TestGenerationSyncBoundedOnSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	const timeout = 100 * time.Millisecond
	c, err := New(rdb, Values[string]{}, WithPrefix("silent:"), WithInvalidationHealthCheck(time.Hour, timeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	start := time.Now()
	err = c.gens.Sync(context.Background())
	took := time.Since(start)
	t.Logf("sync took %v: %v", took, err)
	if err == nil {
		t.Fatal("a sync against a silent server succeeded")
	}
	if took >= 2*time.Second { // the client's read timeout is 3 s
		t.Fatalf("sync took %v: not bounded by the health timeout %v", took, timeout)
	}
}
