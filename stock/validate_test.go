package stock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A stock of 0 is a sale like any other: it loads, and buyers are answered
// SoldOut (it was refused with ErrInvalidArgument, and buyers got NotOnSale).
func TestZeroStockLoadsAndIsSoldOut(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("buckets=%d", n), func(t *testing.T) {
				inv := newInv(t, rdb, WithBuckets(n))
				if err := inv.Load(ctx, "sku", 0, Window{}); err != nil {
					t.Fatalf("load: %v", err)
				}
				for i := 0; i < 3; i++ {
					res, err := inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
					if err != nil || res.Outcome != SoldOut {
						t.Fatalf("reserve: %+v %v", res, err)
					}
				}
				store := newSQLite(t)
				store.SetStock(ctx, "sku", 0)
				drain(t, newConsumer(t, inv, store))
				if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() || rep.Redis.Stock != 0 {
					t.Fatalf("reconcile: %v %v", rep, err)
				}
			})
		}
	})
}

// Every exported entry point answers bad arguments with an error matchable
// with errors.Is, never a panic, and before touching Redis or the database.
func TestEveryEntryPointRefusesBadArguments(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb, WithBuckets(2))
	load(t, inv, "sku", 10)
	store := newSQLite(t)
	long := strings.Repeat("x", MaxIDLen+1)
	back := Window{Start: time.Now(), End: time.Now().Add(-time.Hour)}
	ev := Event{SKU: "sku", Op: OpReserve, RequestID: "r", User: "u", Qty: 1, Version: 1}
	bad := func(f func(*Event)) Event { e := ev; f(&e); return e }
	nilStore := NewSQLStore(nil, "")
	badPrefix := NewSQLStore(store.db, "x; DROP TABLE y; --")
	cases := []struct {
		name string
		want error
		call func() error
	}{
		{"load negative", ErrInvalidArgument, func() error { return inv.Load(ctx, "n", -1, Window{}) }},
		{"load window", ErrInvalidArgument, func() error { return inv.Load(ctx, "w", 1, back) }},
		{"expire sku", ErrInvalidArgument, func() error { _, err := inv.ExpireDue(ctx, "", 0, 1); return err }},
		{"expire bucket -1", ErrInvalidArgument, func() error { _, err := inv.ExpireDue(ctx, "sku", -1, 1); return err }},
		{"expire bucket 2 of 2", ErrInvalidArgument, func() error { _, err := inv.ExpireDue(ctx, "sku", 2, 1); return err }},
		{"expire limit 0", ErrInvalidArgument, func() error { _, err := inv.ExpireDue(ctx, "sku", 0, 0); return err }},
		{"expire limit -5", ErrInvalidArgument, func() error { _, err := inv.ExpireDue(ctx, "sku", 0, -5); return err }},
		{"reconcile sku", ErrInvalidArgument, func() error { _, err := inv.Reconcile(ctx, "a{b", store, ""); return err }},
		{"reconcile nil ledger", ErrInvalidArgument, func() error { _, err := inv.Reconcile(ctx, "sku", nil, ""); return err }},
		{"reconcile group", ErrInvalidArgument, func() error { _, err := inv.Reconcile(ctx, "sku", store, long); return err }},
		{"repair sku", ErrInvalidArgument, func() error { _, err := inv.Repair(ctx, "", store, Window{}, ""); return err }},
		{"repair nil ledger", ErrInvalidArgument, func() error { _, err := inv.Repair(ctx, "sku", nil, Window{}, ""); return err }},
		{"repair window", ErrInvalidArgument, func() error { _, err := inv.Repair(ctx, "sku", store, back, ""); return err }},
		{"unload sku", ErrInvalidArgument, func() error { return inv.Unload(ctx, long, "") }},
		{"unload group", ErrInvalidArgument, func() error { return inv.Unload(ctx, "sku", "\xff") }},
		{"lookup sku", ErrInvalidArgument, func() error { _, err := inv.Lookup(ctx, "", "r"); return err }},
		{"confirm sku", ErrInvalidArgument, func() error { _, err := inv.Confirm(ctx, "", "r"); return err }},
		{"store stock sku", ErrInvalidArgument, func() error { _, err := store.Stock(ctx, ""); return err }},
		{"store orders sku", ErrInvalidArgument, func() error { _, err := store.Orders(ctx, long); return err }},
		{"store apply sku", ErrPoison, func() error { return store.Apply(ctx, bad(func(e *Event) { e.SKU = "" })) }},
		{"store apply id", ErrPoison, func() error { return store.Apply(ctx, bad(func(e *Event) { e.RequestID = long })) }},
		{"store apply user", ErrPoison, func() error { return store.Apply(ctx, bad(func(e *Event) { e.User = "" })) }},
		{"store apply qty", ErrPoison, func() error { return store.Apply(ctx, bad(func(e *Event) { e.Qty = 0 })) }},
		{"store apply version", ErrPoison, func() error { return store.Apply(ctx, bad(func(e *Event) { e.Version = 7 })) }},
		{"nil db create", ErrInvalidArgument, func() error { return nilStore.CreateTables(ctx) }},
		{"nil db apply", ErrInvalidArgument, func() error { return nilStore.Apply(ctx, ev) }},
		{"nil db stock", ErrInvalidArgument, func() error { _, err := nilStore.Stock(ctx, "sku"); return err }},
		{"nil db orders", ErrInvalidArgument, func() error { _, err := nilStore.Orders(ctx, "sku"); return err }},
		{"nil db parked", ErrInvalidArgument, func() error { _, err := nilStore.Parked(ctx, time.Now()); return err }},
		{"nil db set stock", ErrInvalidArgument, func() error { return nilStore.SetStock(ctx, "sku", 1) }},
		{"table prefix", ErrInvalidArgument, func() error { return badPrefix.CreateTables(ctx) }},
		{"consumer group", ErrInvalidOption, func() error { _, err := NewConsumer(inv, store, WithGroup(long)); return err }},
		{"consumer name", ErrInvalidOption, func() error { _, err := NewConsumer(inv, store, WithConsumerName("\xff")); return err }},
		{"consumer claim idle", ErrInvalidOption, func() error { _, err := NewConsumer(inv, store, WithClaimIdle(-1)); return err }},
		{"consumer timeout", ErrInvalidOption, func() error { _, err := NewConsumer(inv, store, WithTimeout(0)); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			if err := c.call(); !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
		})
	}
	if st := mustStatus(t, inv, "sku"); st.Remaining != 10 {
		t.Fatalf("status %+v", st)
	}
	if os := ordersByID(t, store, "sku"); len(os) != 0 {
		t.Fatalf("orders %v", os)
	}
}
