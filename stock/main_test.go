package stock

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var (
	onTopologies = redistest.OnTopologies
	nsFor        = func(t testing.TB) string { return redistest.Name(t) + ":" }
)

func newInv(t testing.TB, rdb redis.UniversalClient, opts ...Option) *Inventory {
	t.Helper()
	inv, err := New(rdb, append([]Option{WithPrefix(nsFor(t)), WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func load(t testing.TB, inv *Inventory, sku string, qty int64) {
	t.Helper()
	if err := inv.Load(context.Background(), sku, qty, Window{}); err != nil {
		t.Fatal(err)
	}
}

// outboxOps counts the outbox entries of a sale by op, over all buckets.
func outboxOps(t testing.TB, inv *Inventory, sku string) map[string]int {
	t.Helper()
	ctx := context.Background()
	ops := map[string]int{}
	for b := 0; b < inv.cfg.buckets; b++ {
		msgs, err := inv.rdb.XRange(ctx, inv.keys(sku, b).outbox, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			ops[m.Values["op"].(string)]++
		}
	}
	return ops
}

func mustStatus(t testing.TB, inv *Inventory, sku string) Status {
	t.Helper()
	st, err := inv.Status(context.Background(), sku)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sharedSingle(t testing.TB) redis.UniversalClient { return redistest.SharedSingle(t) }
