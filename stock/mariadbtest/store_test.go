package mariadbtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/stock"
	"github.com/redis/go-redis/v9"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func drain(t *testing.T, c *stock.Consumer) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		n, err := c.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("consumer never ran dry")
}

// The whole database side on MariaDB: 2,000 buyers for 50 units, confirms
// and releases, a consumer that fails mid-way and one that takes over, a
// release applied before its reservation, a second delivery of everything;
// the order table then matches Redis exactly.
func TestSaleOnMariaDB(t *testing.T) {
	for _, top := range redistest.Topologies() {
		t.Run(top.Name, func(t *testing.T) {
			ctx := context.Background()
			db := newDB(t)
			store := stock.NewSQLStore(db, "")
			if err := store.CreateTables(ctx); err != nil {
				t.Fatal(err)
			}
			store.SetStock(ctx, "sku", 50)
			rdb := top.New(t)
			buckets := 1
			if _, ok := rdb.(*redis.ClusterClient); ok {
				buckets = 3
			}
			inv, err := stock.New(rdb, stock.WithPrefix("m"+t.Name()[len(t.Name())-3:]+":"), stock.WithBuckets(buckets), stock.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Load(ctx, "sku", 50, stock.Window{}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var won []string
			var wg sync.WaitGroup
			for i := 0; i < 2000; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("r%d", i)
					res, err := inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i%1500), id, 1)
					if err == nil && res.Outcome == stock.Reserved && !res.Duplicate {
						mu.Lock()
						won = append(won, id)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(won) != 50 {
				t.Fatalf("%d reservations", len(won))
			}
			// A consumer whose database writes fail leaves everything pending.
			failing := stock.SinkFunc(func(context.Context, stock.Event) error { return errors.New("connection reset") })
			c1, _ := stock.NewConsumer(inv, failing, stock.WithConsumerName("c1"), stock.WithLogger(quiet), stock.WithMaxDeliveries(100))
			c1.Pass(ctx)
			// Releases reach the database before their reservations.
			for _, id := range won[:5] {
				if _, err := inv.Release(ctx, "sku", id); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range won[5:30] {
				inv.Confirm(ctx, "sku", id)
			}
			c2, _ := stock.NewConsumer(inv, store, stock.WithConsumerName("c2"), stock.WithLogger(quiet))
			drain(t, c2)
			if parked, _ := store.ParkStats(); parked < 5 {
				t.Fatalf("%d parked", parked)
			}
			c3, _ := stock.NewConsumer(inv, store, stock.WithConsumerName("c3"), stock.WithLogger(quiet), stock.WithClaimIdle(0))
			drain(t, c3)
			if c3.Stats().Claimed == 0 {
				t.Fatal("nothing claimed from the failing consumer")
			}
			rep, err := inv.Reconcile(ctx, "sku", store, "")
			if err != nil || !rep.Clean() {
				t.Fatalf("reconcile: %v %v", rep, err)
			}
			// Every order once more, as a redelivery would: nothing changes.
			orders, _ := store.Orders(ctx, "sku")
			for _, o := range orders {
				for v, op := range []stock.Op{stock.OpReserve, stock.OpConfirm, stock.OpRelease} {
					if v+1 > o.Version {
						break
					}
					store.Apply(ctx, stock.Event{SKU: "sku", Op: op, RequestID: o.RequestID, User: o.User, Qty: o.Qty, Version: v + 1})
				}
			}
			again, _ := store.Orders(ctx, "sku")
			if fmt.Sprint(len(again)) != fmt.Sprint(len(orders)) {
				t.Fatal("orders changed on redelivery")
			}
			rep, _ = inv.Reconcile(ctx, "sku", store, "")
			if !rep.Clean() || rep.DBActive != 45 || rep.Redis.Sold != 25 {
				t.Fatalf("after redelivery: %v", rep)
			}
		})
	}
}
