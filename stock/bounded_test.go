package stock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Against a frozen server, on a go-redis client with default options (which
// ignores context deadlines while it waits for a reply), every call returns
// by its context's deadline, not after the client's ReadTimeout; and a
// consumer's Close returns by its own.
func TestCallsBoundedByTheContextOnADefaultClient(t *testing.T) {
	redistest.NeedServer(t)
	ctx := context.Background()
	srv := redistest.Start(t)
	const readTimeout = 5 * time.Second
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: readTimeout, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	inv := newInv(t, rdb)
	load(t, inv, "sku", 10)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", 10)
	inv.Reserve(ctx, "sku", "u0", "r0", 1)
	c := newConsumer(t, inv, store)
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	const deadline = 200 * time.Millisecond
	for _, step := range []struct {
		name string
		call func(context.Context) error
	}{
		{"reserve", func(ctx context.Context) error { _, err := inv.Reserve(ctx, "sku", "u1", "r1", 1); return err }},
		{"release", func(ctx context.Context) error { _, err := inv.Release(ctx, "sku", "r0"); return err }},
		{"status", func(ctx context.Context) error { _, err := inv.Status(ctx, "sku"); return err }},
		{"lookup", func(ctx context.Context) error { _, err := inv.Lookup(ctx, "sku", "r0"); return err }},
		{"reconcile", func(ctx context.Context) error { _, err := inv.Reconcile(ctx, "sku", store, ""); return err }},
		{"load", func(ctx context.Context) error { return inv.Load(ctx, "other", 1, Window{}) }},
		{"pass", func(ctx context.Context) error { _, err := c.Pass(ctx); return err }},
	} {
		short, cancel := context.WithTimeout(ctx, deadline)
		start := time.Now()
		err := step.call(short)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || took > readTimeout/2 {
			t.Errorf("%s on a frozen server: %v after %v, want the context's deadline (%v)", step.name, err, took, deadline)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	short, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	c.Close(short)
	if took := time.Since(start); took > readTimeout/2 {
		t.Errorf("close took %v", took)
	}
	stop()
	<-ran
}
