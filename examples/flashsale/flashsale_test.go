package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

// The demo at a tenth of its size passes every check, on one node and on a
// cluster with the stock over three buckets.
func TestFlashSaleSmall(t *testing.T) {
	cfg := defaultConfig()
	cfg.Buyers, cfg.Stock, cfg.Hold, cfg.KillAfter, cfg.ClaimIdle = 1000, 20, time.Second, 10, 200*time.Millisecond
	t.Run("single", func(t *testing.T) {
		srv, _ := redistest.Single(t)
		runDemo(t, cfg, srv.Addr)
	})
	t.Run("cluster-buckets", func(t *testing.T) {
		cl, _ := redistest.StartCluster(t)
		c := cfg
		c.Buckets = 3
		runDemo(t, c, strings.Join(cl.Addrs(), ","))
	})
}

func runDemo(t *testing.T, cfg config, addr string) {
	var out bytes.Buffer
	failed, err := run(context.Background(), cfg, addr, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if failed != 0 {
		t.Fatalf("%d checks failed", failed)
	}
	if n := strings.Count(out.String(), "  ok   "); n != 9 {
		t.Fatalf("%d checks passed, want 9", n)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("units sold = %d of %d", cfg.Stock, cfg.Stock)) {
		t.Fatal("not sold out")
	}
}
