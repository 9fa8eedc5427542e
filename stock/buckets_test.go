package stock

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A buyer whose home bucket is empty takes units from the others; if it
// dies right after taking them, the units are in flight, not lost: the
// consumer credits them to the home bucket and they are sold there.
func TestBucketMoveSurvivesCrash(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(4), WithLocalSoldOut(0))
		load(t, inv, "sku", 4) // one unit per bucket
		store := newSQLite(t)
		store.SetStock(ctx, "sku", 4)
		// Two users with the same home bucket: the second finds it empty.
		var a, b string
		for i := 0; b == ""; i++ {
			u := fmt.Sprintf("user%d", i)
			switch {
			case a == "":
				a = u
			case homeBucket(u, 4) == homeBucket(a, 4):
				b = u
			}
		}
		if res, _ := inv.Reserve(ctx, "sku", a, "ra", 1); res.Outcome != Reserved {
			t.Fatalf("first: %+v", res)
		}
		inv.hooks.afterBorrow = func(string, int) error { return errCrash }
		if _, err := inv.Reserve(ctx, "sku", b, "rb", 1); !errors.Is(err, errCrash) {
			t.Fatalf("crash: %v", err)
		}
		inv.hooks.afterBorrow = nil
		st := mustStatus(t, inv, "sku")
		if st.InFlight != 3 || st.Remaining != 0 || st.Reserved != 1 {
			t.Fatalf("in flight: %+v", st)
		}
		rep, _ := inv.Reconcile(ctx, "sku", store, "")
		if rep.Undersold != 0 || rep.Oversold != 0 || rep.Pending == 0 {
			t.Fatalf("reconcile in flight: %v", rep)
		}
		c := newConsumer(t, inv, store)
		drain(t, c)
		st = mustStatus(t, inv, "sku")
		if st.InFlight != 0 || st.Remaining != 3 || c.Stats().Credited != 3 {
			t.Fatalf("after the consumer: %+v %+v", st, c.Stats())
		}
		// The retry of the crashed request buys from the credited units.
		if res, _ := inv.Reserve(ctx, "sku", b, "rb", 1); res.Outcome != Reserved || res.Duplicate {
			t.Fatalf("retry: %+v", res)
		}
		for i := 0; i < 10; i++ {
			inv.Reserve(ctx, "sku", fmt.Sprintf("x%d", i), fmt.Sprintf("rx%d", i), 1)
		}
		drain(t, c)
		rep, _ = inv.Reconcile(ctx, "sku", store, "")
		if !rep.Clean() || rep.DBActive != 4 || rep.Redis.Remaining != 0 {
			t.Fatalf("end: %v", rep)
		}
	})
}

// Units scattered one per bucket still make up a larger purchase: SoldOut
// only when the whole sale has fewer units than asked.
func TestBucketsGatherScatteredUnits(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb, WithBuckets(4), WithPerUserLimit(4))
	load(t, inv, "sku", 4)
	if res, err := inv.Reserve(ctx, "sku", "big", "r1", 3); err != nil || res.Outcome != Reserved {
		t.Fatalf("3 of 4 scattered units: %+v %v", res, err)
	}
	if res, _ := inv.Reserve(ctx, "sku", "other", "r2", 2); res.Outcome != SoldOut {
		t.Fatalf("2 of the 1 left: %+v", res)
	}
	st := mustStatus(t, inv, "sku")
	if st.Reserved != 3 || st.Remaining+st.InFlight != 1 {
		t.Fatalf("status %+v", st)
	}
}

// Units borrowed from the other buckets (one pipeline of scripts) after the
// servers lost their script cache (SCRIPT FLUSH, as a restart or a new
// cluster node) still make up the purchase, each bucket's move made once.
func TestBorrowAfterScriptFlush(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(4), WithPerUserLimit(4))
		load(t, inv, "sku", 4) // one unit per bucket
		redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() })
		if res, err := inv.Reserve(ctx, "sku", "big", "r1", 3); err != nil || res.Outcome != Reserved {
			t.Fatalf("3 of 4 scattered units after SCRIPT FLUSH: %+v %v", res, err)
		}
		if ops := outboxOps(t, inv, "sku"); ops["xfer"] != 3 || ops["reserve"] != 1 {
			t.Fatalf("outbox %v; want 3 moves (one per other bucket) and 1 reservation", ops)
		}
		if st := mustStatus(t, inv, "sku"); st.Reserved != 3 || st.Remaining != 1 || st.InFlight != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}
