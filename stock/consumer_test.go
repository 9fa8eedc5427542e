package stock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var errCrash = errors.New("consumer crashed")

// Every reservation, confirm and release reaches the database once in
// effect, even when every entry is delivered twice.
func TestConsumerAppliesEachChangeOnce(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(2))
		load(t, inv, "sku", 10)
		store := newSQLite(t)
		for i := 0; i < 12; i++ {
			if _, err := inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1); err != nil {
				t.Fatal(err)
			}
		}
		inv.Confirm(ctx, "sku", "r0")
		inv.Release(ctx, "sku", "r1")
		inv.Confirm(ctx, "sku", "r2")
		inv.Release(ctx, "sku", "r2") // a refund
		c := newConsumer(t, inv, store)
		drain(t, c)
		// Deliver everything again, as a crashed consumer's successor would.
		for b := 0; b < 2; b++ {
			msgs, _ := rdb.XRange(ctx, inv.keys("sku", b).outbox, "-", "+").Result()
			for _, m := range msgs {
				ev, err := parseEvent("sku", b, m)
				if err != nil || ev.Op == opXfer {
					continue
				}
				if err := store.Apply(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		orders := ordersByID(t, store, "sku")
		want := map[string]State{"r0": StateConfirmed, "r1": StateReleased, "r2": StateReleased}
		active := 0
		for id, o := range orders {
			if w, ok := want[id]; ok && o.State != w {
				t.Errorf("%s: %v, want %v", id, o.State, w)
			}
			if !o.Applied {
				t.Errorf("%s not applied", id)
			}
			if o.State != StateReleased {
				active++
			}
		}
		st := mustStatus(t, inv, "sku")
		if len(orders) != 10 || int64(active) != st.Reserved+st.Sold || active != 8 {
			t.Fatalf("%d orders, %d active; status %+v", len(orders), active, st)
		}
	})
}

// A consumer that read entries and died before acknowledging them: another
// consumer claims them (XAUTOCLAIM) and nothing is lost or doubled.
func TestConsumerCrashRedelivery(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb)
		load(t, inv, "sku", 5)
		store := newSQLite(t)
		for i := 0; i < 5; i++ {
			inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1)
		}
		var seen []string
		dying := newConsumer(t, inv, store, WithConsumerName("dying"), withConsumerHooks(consumerHooks{
			afterRead: func(ids []string) error { seen = append(seen, ids...); return errCrash },
		}))
		if _, err := dying.Pass(ctx); !errors.Is(err, errCrash) {
			t.Fatalf("pass: %v", err)
		}
		if len(seen) != 5 {
			t.Fatalf("dying consumer read %d", len(seen))
		}
		if n := len(ordersByID(t, store, "sku")); n != 0 {
			t.Fatalf("%d orders before the takeover", n)
		}
		// A live consumer with a long claim idle does not steal them...
		patient := newConsumer(t, inv, store, WithConsumerName("patient"))
		drain(t, patient)
		if n := len(ordersByID(t, store, "sku")); n != 0 {
			t.Fatalf("%d orders taken from a consumer not yet idle", n)
		}
		// ...one whose idle limit has passed (0 here) does.
		heir := newConsumer(t, inv, store, WithConsumerName("heir"), WithClaimIdle(0))
		drain(t, heir)
		if n := len(ordersByID(t, store, "sku")); n != 5 {
			t.Fatalf("%d orders after the takeover", n)
		}
		if s := heir.Stats(); s.Claimed != 5 || s.Applied != 5 {
			t.Fatalf("stats %+v", s)
		}
		p, _ := rdb.XPending(ctx, inv.keys("sku", 0).outbox, "stock").Result()
		if p.Count != 0 {
			t.Fatalf("%d still pending", p.Count)
		}
	})
}

// Entries that can never be applied go to the dead-letter stream and do not
// hold up the entries behind them.
func TestConsumerPoisonToDeadLetter(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	inv.Reserve(ctx, "sku", "u0", "r0", 1)
	// Foreign data in the outbox.
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: inv.keys("sku", 0).outbox, Values: map[string]any{"op": "reserve", "qty": "lots"}})
	inv.Reserve(ctx, "sku", "u1", "bad-db", 1)
	inv.Reserve(ctx, "sku", "u2", "r2", 1)
	// The database refuses one request every time.
	sink := SinkFunc(func(ctx context.Context, ev Event) error {
		if ev.RequestID == "bad-db" {
			return errors.New("constraint violated")
		}
		return store.Apply(ctx, ev)
	})
	c := newConsumer(t, inv, sink, WithClaimIdle(0), WithMaxDeliveries(3))
	for i := 0; i < 10; i++ {
		c.Pass(ctx)
	}
	orders := ordersByID(t, store, "sku")
	if _, ok := orders["r2"]; !ok || len(orders) != 2 {
		t.Fatalf("orders %v", orders)
	}
	s := c.Stats()
	if s.DeadLettered != 2 || s.Failed < 2 {
		t.Fatalf("stats %+v", s)
	}
	dead, _ := rdb.XRange(ctx, deadKey(inv.cfg.ns), "-", "+").Result()
	if len(dead) != 2 {
		t.Fatalf("%d dead letters", len(dead))
	}
	p, _ := rdb.XPending(ctx, inv.keys("sku", 0).outbox, "stock").Result()
	if p.Count != 0 {
		t.Fatalf("%d still pending", p.Count)
	}
}

// A release that reaches the database before its reservation is parked, set
// off an alert, and is completed when the reservation arrives.
func TestReleaseBeforeApply(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb)
		load(t, inv, "sku", 5)
		store := newSQLite(t)
		inv.Reserve(ctx, "sku", "u", "r", 1)
		// The reservation's entry is taken by a consumer that dies with it.
		dying := newConsumer(t, inv, store, WithConsumerName("dying"), withConsumerHooks(consumerHooks{
			afterRead: func([]string) error { return errCrash },
		}))
		dying.Pass(ctx)
		if _, err := inv.Release(ctx, "sku", "r"); err != nil {
			t.Fatal(err)
		}
		live := newConsumer(t, inv, store, WithConsumerName("live"), WithParkAlert(1))
		drain(t, live)
		o := ordersByID(t, store, "sku")["r"]
		if o.Applied || o.State != StateReleased {
			t.Fatalf("parked row %+v", o)
		}
		if s := live.Stats(); s.ParkAlerts < 1 || s.Parked != 1 {
			t.Fatalf("stats %+v", s)
		}
		heir := newConsumer(t, inv, store, WithConsumerName("heir"), WithClaimIdle(0))
		drain(t, heir)
		o = ordersByID(t, store, "sku")["r"]
		if !o.Applied || o.State != StateReleased {
			t.Fatalf("row after the reservation %+v", o)
		}
		if p, j := store.ParkStats(); p != 1 || j != 1 {
			t.Fatalf("parked %d joined %d", p, j)
		}
		if n, _ := store.Parked(ctx, time.Now().Add(time.Hour)); n != 0 {
			t.Fatalf("%d still parked", n)
		}
	})
}

// While the database is down every entry fails: none may end in the
// dead-letter stream for that, however often it is delivered; all are
// applied once the database is back.
func TestConsumerOutageDeadLettersNothing(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	for i := 0; i < 3; i++ {
		inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1)
	}
	down := true
	sink := SinkFunc(func(ctx context.Context, ev Event) error {
		if down {
			return errors.New("database unreachable")
		}
		return store.Apply(ctx, ev)
	})
	c := newConsumer(t, inv, sink, WithClaimIdle(0), WithMaxDeliveries(1))
	for i := 0; i < 5; i++ {
		c.Pass(ctx)
	}
	if s := c.Stats(); s.DeadLettered != 0 || s.Failed < 10 {
		t.Fatalf("during the outage: %+v", s)
	}
	down = false
	drain(t, c)
	if n := len(ordersByID(t, store, "sku")); n != 3 || c.Stats().DeadLettered != 0 {
		t.Fatalf("%d orders, stats %+v", n, c.Stats())
	}
}
