package stock

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The examples fall back to miniredis where no redis-server exists. Its
// XINFO GROUPS reports a lag for entries already delivered, so the outbox
// backlog is counted from the group's last delivered id instead: a drained
// sale reconciles clean there too.
func TestReconcileOnMiniredisFallback(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", 5)
	inv.Reserve(ctx, "sku", "u", "r", 1)
	if rep, _ := inv.Reconcile(ctx, "sku", store, ""); rep.Pending != 1 {
		t.Fatalf("before the consumer: %v", rep)
	}
	drain(t, newConsumer(t, inv, store))
	if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() {
		t.Fatalf("after the consumer: %v %v", rep, err)
	}
}
