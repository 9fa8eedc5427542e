package stock

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A client configured with more buckets than the sale was loaded with is
// told so by every Reserve, whichever bucket is its buyer's home: buyers
// whose home bucket does not exist in the sale were answered NotOnSale
// while the sale was open.
func TestReserveWithMoreBucketsThanTheSale(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb)
		load(t, inv, "sku", 100)
		wide := newInv(t, rdb, WithBuckets(3))
		homes := map[int]bool{}
		for i := 0; len(homes) < 3; i++ {
			u := "user" + itoa(i)
			homes[homeBucket(u, 3)] = true
			res, err := wide.Reserve(ctx, "sku", u, "r"+itoa(i), 1)
			if !errors.Is(err, ErrBucketsMismatch) {
				t.Fatalf("%s (home bucket %d of 3): %+v, %v; want ErrBucketsMismatch", u, homeBucket(u, 3), res, err)
			}
		}
		if st := mustStatus(t, inv, "sku"); st.Remaining != 100 {
			t.Fatalf("status %+v", st)
		}
	})
}

// Load of a SKU already loaded with another bucket count is refused and
// leaves the sale as it was: it wrote its count into the sales registry
// before refusing, and Status, Reconcile and Unload then failed on the
// sale.
func TestRefusedLoadLeavesTheSaleAlone(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb)
		load(t, inv, "sku", 10)
		store := newSQLite(t)
		store.SetStock(ctx, "sku", 10)
		inv.Reserve(ctx, "sku", "u", "r", 1)
		wide := newInv(t, rdb, WithBuckets(3))
		if err := wide.Load(ctx, "sku", 10, Window{}); !errors.Is(err, ErrSaleExists) {
			t.Fatalf("load with 3 buckets: %v", err)
		}
		if n, err := rdb.HGet(ctx, salesKey(inv.cfg.ns), "sku").Result(); err != nil || n != "1" {
			t.Fatalf("sales registry: %q %v", n, err)
		}
		if st, err := inv.Status(ctx, "sku"); err != nil || st.Reserved != 1 || st.Buckets != 1 {
			t.Fatalf("status: %+v %v", st, err)
		}
		drain(t, newConsumer(t, inv, store))
		if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() {
			t.Fatalf("reconcile: %v %v", rep, err)
		}
		if err := inv.Unload(ctx, "sku", ""); err != nil {
			t.Fatalf("unload: %v", err)
		}
	})
}

// A client with fewer buckets than the sale does not find requests held in
// the buckets it does not look in: Confirm, Release and Lookup say the
// counts differ rather than ErrUnknownRequest.
func TestSettleWithFewerBucketsThanTheSale(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	wide := newInv(t, rdb, WithBuckets(3))
	load(t, wide, "sku", 30)
	user := ""
	for i := 0; user == ""; i++ {
		if u := "user" + itoa(i); homeBucket(u, 3) != 0 {
			user = u
		}
	}
	if res, err := wide.Reserve(ctx, "sku", user, "r", 1); err != nil || res.Outcome != Reserved {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	narrow := newInv(t, rdb)
	if _, err := narrow.Release(ctx, "sku", "r"); !errors.Is(err, ErrBucketsMismatch) {
		t.Errorf("release: %v", err)
	}
	if _, err := narrow.Confirm(ctx, "sku", "r"); !errors.Is(err, ErrBucketsMismatch) {
		t.Errorf("confirm: %v", err)
	}
	if _, err := narrow.Lookup(ctx, "sku", "r"); !errors.Is(err, ErrBucketsMismatch) {
		t.Errorf("lookup: %v", err)
	}
	if st := mustStatus(t, wide, "sku"); st.Reserved != 1 {
		t.Fatalf("status %+v", st)
	}
}
