package stock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// An unconfirmed reservation whose hold is due comes back to the sale by the
// consumer's pass, and the database learns it; a confirmed one does not.
func TestReservationExpiry(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithHoldFor(time.Minute), WithLocalSoldOut(0))
		load(t, inv, "sku", 2)
		store := newSQLite(t)
		inv.Reserve(ctx, "sku", "a", "ra", 1)
		inv.Reserve(ctx, "sku", "b", "rb", 1)
		if res, _ := inv.Reserve(ctx, "sku", "c", "rc", 1); res.Outcome != SoldOut {
			t.Fatalf("third buyer: %v", res.Outcome)
		}
		inv.Confirm(ctx, "sku", "rb")
		k := inv.keys("sku", 0)
		// The hold was set by the Redis clock, a minute ahead.
		tm, _ := rdb.Time(ctx).Result()
		if s := rdb.ZScore(ctx, k.due, "ra").Val(); s < float64(tm.UnixMilli()+50_000) {
			t.Fatalf("due %v, server time %v", s, tm.UnixMilli())
		}
		c := newConsumer(t, inv, store)
		drain(t, c)
		if c.Stats().Expired != 0 {
			t.Fatal("expired early")
		}
		// Make both holds due now (rb was confirmed: its entry is gone, so
		// plant one as a stale timer would be).
		rdb.ZAdd(ctx, k.due, redis.Z{Score: 0, Member: "ra"}, redis.Z{Score: 0, Member: "rb"})
		drain(t, c)
		if c.Stats().Expired != 1 {
			t.Fatalf("stats %+v", c.Stats())
		}
		st := mustStatus(t, inv, "sku")
		if st.Remaining != 1 || st.Sold != 1 || st.Reserved != 0 {
			t.Fatalf("status %+v", st)
		}
		o := ordersByID(t, store, "sku")
		if o["ra"].State != StateReleased || o["rb"].State != StateConfirmed {
			t.Fatalf("orders %+v", o)
		}
		// The returned unit is sold again; confirming the expired one fails.
		if res, _ := inv.Reserve(ctx, "sku", "c", "rc2", 1); res.Outcome != Reserved {
			t.Fatalf("resale: %v", res.Outcome)
		}
		if _, err := inv.Confirm(ctx, "sku", "ra"); err == nil {
			t.Fatal("confirmed an expired reservation")
		}
	})
}

func TestReconcileFindsPlantedInconsistency(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(3))
		store := newSQLite(t)
		store.SetStock(ctx, "sku", 20)
		load(t, inv, "sku", 20)
		for i := 0; i < 10; i++ {
			inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1)
		}
		inv.Confirm(ctx, "sku", "r1")
		inv.Release(ctx, "sku", "r2")
		c := newConsumer(t, inv, store)
		drain(t, c)
		rep, err := inv.Reconcile(ctx, "sku", store, "")
		if err != nil || !rep.Clean() {
			t.Fatalf("clean sale: %v %v", rep, err)
		}
		// Before the consumer runs, a new reservation shows as unapplied and pending.
		inv.Reserve(ctx, "sku", "late", "r-late", 1)
		rep, _ = inv.Reconcile(ctx, "sku", store, "")
		if len(rep.Unapplied) != 1 || rep.Unapplied[0] != "r-late" || rep.Pending != 1 {
			t.Fatalf("in flight: %v", rep)
		}
		drain(t, c)
		// Plant: three units appear from nowhere in one bucket, an order the
		// database lost, and one the database has that Redis never made.
		rdb.HIncrBy(ctx, inv.keys("sku", 1).meta, "remaining", 3)
		store.db.Exec(`DELETE FROM stock_order WHERE request_id = 'r3'`)
		store.db.Exec(`INSERT INTO stock_order VALUES ('sku', 'ghost', 'g', 1, 'confirmed', 2, 1, 0)`)
		rep, _ = inv.Reconcile(ctx, "sku", store, "")
		if rep.Oversold != 3 || rep.Undersold != 0 || fmt.Sprint(rep.Unapplied) != "[r3]" || fmt.Sprint(rep.Orphans) != "[ghost]" || rep.Pending != 0 {
			t.Fatalf("planted: %v", rep)
		}
		// Counters out of step with the records show as drift.
		rdb.HIncrBy(ctx, inv.keys("sku", 0).meta, "sold", 2)
		rep, _ = inv.Reconcile(ctx, "sku", store, "")
		if rep.CounterDrift != 2 {
			t.Fatalf("drift: %v", rep)
		}
		// Repair trusts the database.
		if _, err := inv.Repair(ctx, "sku", store, Window{}, ""); err != nil {
			t.Fatal(err)
		}
		rep, _ = inv.Reconcile(ctx, "sku", store, "")
		if !rep.Clean() {
			t.Fatalf("after repair: %v", rep)
		}
		if st := rep.Redis; st.Reserved+st.Sold != 10 || st.Remaining != 10 {
			t.Fatalf("after repair: %+v", st)
		}
	})
}

// What a Redis restart keeps. With AOF (appendfsync always) nothing: the
// sale, the reservations and the outbox come back, and the consumer group
// resumes. Without persistence the sale is gone; reconciliation shows the
// database's orders as orphans and the stock as undersold, Repair rebuilds
// the sale from the database, and the reservations not yet consumed before
// the restart are lost (neither side has them). Never oversold either way.
func TestRedisRestartMidSale(t *testing.T) {
	for _, aof := range []bool{true, false} {
		t.Run(fmt.Sprintf("aof=%v", aof), func(t *testing.T) {
			ctx := context.Background()
			var extra []string
			if aof {
				extra = []string{"appendonly", "yes", "appendfsync", "always"}
			}
			redistest.NeedServer(t)
			srv := redistest.Start(t, extra...)
			rdb := srv.Client()
			inv := newInv(t, rdb, WithLocalSoldOut(0))
			store := newSQLite(t)
			store.SetStock(ctx, "sku", 10)
			load(t, inv, "sku", 10)
			for i := 0; i < 4; i++ {
				inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1)
			}
			c := newConsumer(t, inv, store)
			drain(t, c)
			// Two more, not consumed before the crash.
			inv.Reserve(ctx, "sku", "u4", "r4", 1)
			inv.Reserve(ctx, "sku", "u5", "r5", 1)
			srv.Kill()
			srv.Restart()
			if aof {
				st := mustStatus(t, inv, "sku")
				if st.Reserved != 6 || st.Remaining != 4 {
					t.Fatalf("after restart: %+v", st)
				}
				drain(t, c)
				if rep, _ := inv.Reconcile(ctx, "sku", store, ""); !rep.Clean() {
					t.Fatalf("reconcile: %v", rep)
				}
			} else {
				if res, _ := inv.Reserve(ctx, "sku", "u9", "r9", 1); res.Outcome != NotOnSale {
					t.Fatalf("after restart: %v", res.Outcome)
				}
				c.Pass(ctx) // finds nothing; must not fail for good
				rep, _ := inv.Reconcile(ctx, "sku", store, "")
				if !rep.NoSale || rep.Undersold != 10 || len(rep.Orphans) != 4 {
					t.Fatalf("reconcile: %v", rep)
				}
				if _, err := inv.Repair(ctx, "sku", store, Window{}, ""); err != nil {
					t.Fatal(err)
				}
				if st := mustStatus(t, inv, "sku"); st.Reserved != 4 || st.Remaining != 6 {
					t.Fatalf("repaired: %+v", st)
				}
				// The buyers of r0..r3 still hold their unit: their retry is a duplicate.
				if res, _ := inv.Reserve(ctx, "sku", "u0", "r0", 1); !res.Duplicate {
					t.Fatalf("retry after repair: %+v", res)
				}
			}
			// The sale goes on and never oversells.
			for i := 10; i < 30; i++ {
				inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1)
			}
			drain(t, c)
			rep, err := inv.Reconcile(ctx, "sku", store, "")
			if err != nil || !rep.Clean() || rep.DBActive != 10 || rep.Redis.Remaining != 0 {
				t.Fatalf("end: %v %v", rep, err)
			}
		})
	}
}
