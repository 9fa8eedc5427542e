package devredis

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func TestSpawnsRedisServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	t.Setenv("REDIS_URL", "")
	r, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Kind != "redis-server" {
		t.Fatalf("kind %q", r.Kind)
	}
	ctx := context.Background()
	r.Client.Set(ctx, "k", "v", 0)
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.Client.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not come back")
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to start
	}
	if r.Client.Exists(ctx, "k").Val() != 0 {
		t.Fatal("restart kept the data")
	}
}

// The miniredis fallback runs TTLs down in real time, as a server would.
func TestMiniredisClockRuns(t *testing.T) {
	r, err := startMini()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	r.Client.Set(ctx, "k", "v", 30*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for r.Client.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("TTL never ran down")
		}
		time.Sleep(5 * time.Millisecond) // waiting for the TTL itself
	}
}

func TestDialAddress(t *testing.T) {
	m := miniredis.RunT(t)
	for _, addr := range []string{m.Addr(), "redis://" + m.Addr() + "/0"} {
		r, err := Open(addr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != "url" || r.Client.Ping(context.Background()).Err() != nil {
			t.Fatalf("%s: kind %q", addr, r.Kind)
		}
		r.Close()
	}
	if _, err := Open("127.0.0.1:1"); err == nil {
		t.Fatal("dialled a closed port")
	}
}
