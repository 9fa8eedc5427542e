package stock

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// Redis (AOF, appendfsync always) dies after the consumer read a batch and
// before it acknowledged it: the entries come back pending under the
// consumer's name. The same consumer takes them back on its next pass, not
// after ClaimIdle (30 s by default) as if it had died.
func TestOwnPendingResumedAfterAOFRestart(t *testing.T) {
	redistest.NeedServer(t)
	ctx := context.Background()
	srv := redistest.Start(t, "appendonly", "yes", "appendfsync", "always")
	rdb := srv.Client()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 10)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", 10)
	for i := 0; i < 3; i++ {
		inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
	}
	crashed := false
	c := newConsumer(t, inv, store, WithConsumerName("c1"), withConsumerHooks(consumerHooks{
		afterRead: func([]string) error {
			if !crashed {
				crashed = true
				srv.Kill()
			}
			return nil
		},
	}))
	if _, err := c.Pass(ctx); err == nil {
		t.Fatal("a pass whose acknowledgement could not be sent succeeded")
	}
	srv.Restart()
	if p, err := rdb.XPending(ctx, inv.keys("sku", 0).outbox, "stock").Result(); err != nil || p.Count != 3 {
		t.Fatalf("after the restart: %+v %v", p, err)
	}
	if n, err := c.Pass(ctx); err != nil || n != 3 {
		t.Fatalf("next pass handled %d, %v; want the 3 own pending entries", n, err)
	}
	if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() {
		t.Fatalf("reconcile: %v %v", rep, err)
	}
}
