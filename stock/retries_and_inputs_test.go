package stock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// One request id raced from many goroutines, its Release and Confirm racing
// it too: one deduction, one outbox entry per change, counters that add up.
func TestOneRequestIDRacedWithItsReturns(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithPerUserLimit(5))
		load(t, inv, "sku", 10)
		var wg sync.WaitGroup
		var mu sync.Mutex
		firsts, released := 0, 0
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				switch i % 4 {
				case 0, 1:
					res, err := inv.Reserve(ctx, "sku", "u", "r", 2)
					if err != nil {
						t.Error(err)
						return
					}
					if !res.Duplicate {
						mu.Lock()
						firsts++
						mu.Unlock()
					}
				case 2:
					res, err := inv.Release(ctx, "sku", "r")
					if err == nil && !res.Duplicate {
						mu.Lock()
						released++
						mu.Unlock()
					} else if err != nil && !errors.Is(err, ErrUnknownRequest) {
						t.Error(err)
					}
				case 3:
					_, err := inv.Confirm(ctx, "sku", "r")
					if err != nil && !errors.Is(err, ErrUnknownRequest) && !errors.Is(err, ErrReleased) {
						t.Error(err)
					}
				}
			}(i)
		}
		wg.Wait()
		if firsts != 1 {
			t.Fatalf("%d first answers", firsts)
		}
		st := mustStatus(t, inv, "sku")
		ops := outboxOps(t, inv, "sku")
		if ops["reserve"] != 1 || ops["release"] != released || ops["confirm"] > 1 {
			t.Fatalf("outbox %v, released %d", ops, released)
		}
		if released > 1 {
			t.Fatalf("released %d times", released)
		}
		if st.Remaining+st.Reserved+st.Sold != 10 || (released == 1) != (st.Remaining == 10) {
			t.Fatalf("status %+v, released %d", st, released)
		}
		// A reserve retried after its own release answers the first answer
		// and takes nothing.
		res, err := inv.Reserve(ctx, "sku", "u", "r", 2)
		if err != nil || !res.Duplicate {
			t.Fatalf("retry after release: %+v %v", res, err)
		}
		if st2 := mustStatus(t, inv, "sku"); st2 != st {
			t.Fatalf("retry changed %+v -> %+v", st, st2)
		}
	})
}

// Absurd inputs are errors matchable with errors.Is, never panics, and
// leave the sale as it was.
func TestOddIDsAndQuantities(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 3)
	long := strings.Repeat("x", MaxIDLen+1)
	cases := []struct {
		sku, user, req string
		qty            int64
		want           error
	}{
		{"sku", "u", "r", 0, ErrInvalidArgument},
		{"sku", "u", "r", -1, ErrInvalidArgument},
		{"sku", "u", "r", -1 << 63, ErrInvalidArgument},
		{"sku", "u", "r", 1<<63 - 1, ErrInvalidArgument},
		{"sku", "u", "r", 4, ErrInvalidArgument},
		{"", "u", "r", 1, ErrInvalidArgument},
		{long, "u", "r", 1, ErrInvalidArgument},
		{"s{k}u", "u", "r", 1, ErrInvalidArgument},
		{"sku", "", "r", 1, ErrInvalidArgument},
		{"sku", long, "r", 1, ErrInvalidArgument},
		{"sku", "u", "", 1, ErrInvalidArgument},
		{"sku", "u", long, 1, ErrInvalidArgument},
	}
	for _, c := range cases {
		if _, err := inv.Reserve(ctx, c.sku, c.user, c.req, c.qty); !errors.Is(err, c.want) {
			t.Errorf("Reserve(%.10q,%.10q,%.10q,%d) = %v, want %v", c.sku, c.user, c.req, c.qty, err, c.want)
		}
	}
	for _, id := range []string{"", long} {
		if _, err := inv.Release(ctx, "sku", id); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Release(%.10q) = %v", id, err)
		}
		if _, err := inv.Confirm(ctx, "sku", id); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Confirm(%.10q) = %v", id, err)
		}
		if _, err := inv.Lookup(ctx, "sku", id); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Lookup(%.10q) = %v", id, err)
		}
	}
	for _, q := range []int64{-1, MaxQty + 1} {
		if err := inv.Load(ctx, "other", q, Window{}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Load(%d) = %v", q, err)
		}
	}
	if _, err := inv.Status(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Status(\"\") = %v", err)
	}
	// Odd but legal ids: bytes JSON and the stream must carry unchanged.
	odd := []string{"a\"b\\c", "nul\x00byte", "ok", "ünï", " ", "a:b:0", "[]", "1e3"}
	for i, id := range odd {
		res, err := inv.Reserve(ctx, "sku", id, id, 1)
		if i < 3 {
			if err != nil || res.Outcome != Reserved || res.User != id {
				t.Fatalf("Reserve(%q) = %+v %v", id, res, err)
			}
			if _, err := inv.Release(ctx, "sku", id); err != nil {
				t.Fatalf("Release(%q): %v", id, err)
			}
			got, err := inv.Lookup(ctx, "sku", id)
			if err != nil || got.User != id || got.State != StateReleased {
				t.Fatalf("Lookup(%q) = %+v %v", id, got, err)
			}
		}
	}
	store := newSQLite(t)
	c := newConsumer(t, inv, store)
	drain(t, c)
	if s := c.Stats(); s.DeadLettered != 0 {
		t.Fatalf("dead letters %+v", s)
	}
	orders := ordersByID(t, store, "sku")
	for _, id := range odd[:3] {
		if o, ok := orders[id]; !ok || o.User != id {
			t.Errorf("order %q: %+v (%d orders)", id, o, len(orders))
		}
	}
	st := mustStatus(t, inv, "sku")
	if st.Remaining+st.Reserved+st.Sold != 3 {
		t.Fatalf("status %+v", st)
	}
}

// Ids that are not UTF-8 cannot be carried unchanged: the scripts' JSON
// answers replace their bytes (Result.User came back as U+FFFD) and a
// database's text column refuses them, so an entry already answered
// Reserved would fail in the consumer. They are refused at the door.
func TestIDsMustBeUTF8(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 3)
	bad := "\xff\xfe"
	if _, err := inv.Reserve(ctx, "sku", bad, "r1", 1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("user: %v", err)
	}
	if _, err := inv.Reserve(ctx, "sku", "u", bad, 1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("request id: %v", err)
	}
	if _, err := inv.Release(ctx, "sku", bad); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("release: %v", err)
	}
	if err := inv.Load(ctx, "s"+bad, 1, Window{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("sku: %v", err)
	}
	if st := mustStatus(t, inv, "sku"); st.Remaining != 3 {
		t.Fatalf("status %+v", st)
	}
}

// A requester that borrowed units is only slow, not dead: the consumer
// credits its move before the requester's final attempt does. The units
// must be credited once, and the requester must still get its unit.
func TestConsumerCreditsBeforeSlowRequester(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(4), WithLocalSoldOut(0))
		load(t, inv, "sku", 4)
		store := newSQLite(t)
		store.SetStock(ctx, "sku", 4)
		var a, b string
		for i := 0; b == ""; i++ {
			u := "user" + itoa(i)
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
		c := newConsumer(t, inv, store, WithClaimIdle(0))
		inv.hooks.afterBorrow = func(string, int) error { drain(t, c); return nil }
		res, err := inv.Reserve(ctx, "sku", b, "rb", 1)
		inv.hooks.afterBorrow = nil
		if err != nil || res.Outcome != Reserved {
			t.Fatalf("slow requester: %+v %v", res, err)
		}
		drain(t, c)
		st := mustStatus(t, inv, "sku")
		if st.Remaining+st.Reserved+st.Sold+st.InFlight != 4 || st.Reserved != 2 || st.InFlight != 0 {
			t.Fatalf("status %+v", st)
		}
		for i := 0; i < 10; i++ {
			inv.Reserve(ctx, "sku", "x"+itoa(i), "rx"+itoa(i), 1)
		}
		drain(t, c)
		if st := mustStatus(t, inv, "sku"); st.Reserved != 4 || st.Remaining != 0 {
			t.Fatalf("after selling out: %+v", st)
		}
		rep, err := inv.Reconcile(ctx, "sku", store, "")
		if err != nil || !rep.Clean() {
			t.Fatalf("reconcile: %v %v", rep, err)
		}
	})
}

func itoa(i int) string { return fmt.Sprint(i) }

// A consumer restarted under its own name gets its pending entries back at
// once (WithConsumerName's promise), not after ClaimIdle: the process that
// read them and failed to apply them closed its consumer (a deploy), which
// gave the name back.
func TestRestartUnderSameNameResumesAtOnce(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	for i := 0; i < 3; i++ {
		inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
	}
	dying := newConsumer(t, inv, store, WithConsumerName("c1"), withConsumerHooks(consumerHooks{
		afterRead: func([]string) error { return errCrash },
	}))
	if _, err := dying.Pass(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("pass: %v", err)
	}
	if err := dying.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again := newConsumer(t, inv, store, WithConsumerName("c1")) // default ClaimIdle: 30 s
	if n, err := again.Pass(ctx); err != nil || n != 3 {
		t.Fatalf("restarted consumer handled %d, %v", n, err)
	}
	if got := len(ordersByID(t, store, "sku")); got != 3 {
		t.Fatalf("%d orders", got)
	}
}

// A database row that names the right request but the wrong units or the
// wrong buyer (a hand edit, a buggy sink) is a difference Reconcile reports,
// even when the totals still fit the stock.
func TestReconcileFindsMismatchedOrder(t *testing.T) {
	for _, plant := range []string{"qty = 3", "user_id = 'mallory'"} {
		t.Run(plant, func(t *testing.T) {
			rdb := sharedSingle(t)
			ctx := context.Background()
			inv := newInv(t, rdb)
			load(t, inv, "sku", 10)
			store := newSQLite(t)
			store.SetStock(ctx, "sku", 10)
			for i := 0; i < 3; i++ {
				inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
			}
			drain(t, newConsumer(t, inv, store))
			if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() {
				t.Fatalf("before: %v %v", rep, err)
			}
			if _, err := store.db.ExecContext(ctx, `UPDATE `+store.order+` SET `+plant+` WHERE request_id = 'r1'`); err != nil {
				t.Fatal(err)
			}
			rep, err := inv.Reconcile(ctx, "sku", store, "")
			if err != nil || rep.Clean() || len(rep.Mismatched) != 1 || rep.Mismatched[0] != "r1" {
				t.Fatalf("planted %s: %v %v", plant, rep, err)
			}
		})
	}
}

// A Reserve and a Release whose replies are lost after they landed (the
// replies blackholed until the caller's deadline), retried under the same
// id: each retry answers the first answer and nothing is applied twice.
func TestRetryAfterLostReply(t *testing.T) {
	redistest.NeedServer(t)
	ctx := context.Background()
	srv, _ := redistest.RealSingle(t)
	px, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	inv := newInv(t, rdb, WithPerUserLimit(2))
	load(t, inv, "sku", 3)
	lost := func(call func(ctx context.Context) error) {
		t.Helper()
		px.Blackhole(faultproxy.ToClient)
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := call(short)
		cancel()
		px.Heal()
		if err == nil {
			t.Fatal("a call whose reply was blackholed succeeded")
		}

	}
	// Load the scripts first, so the lost replies are the scripts' own
	// answers and not a NOSCRIPT before anything ran.
	inv.Reserve(ctx, "sku", "w", "warm", 1)
	inv.Release(ctx, "sku", "warm")
	lost(func(ctx context.Context) error { _, err := inv.Reserve(ctx, "sku", "u", "r", 2); return err })
	res, err := inv.Reserve(ctx, "sku", "u", "r", 2)
	if err != nil || !res.Duplicate || res.Outcome != Reserved || res.Qty != 2 {
		t.Fatalf("retried reserve: %+v %v", res, err)
	}
	lost(func(ctx context.Context) error { _, err := inv.Release(ctx, "sku", "r"); return err })
	res, err = inv.Release(ctx, "sku", "r")
	if err != nil || !res.Duplicate || res.State != StateReleased {
		t.Fatalf("retried release: %+v %v", res, err)
	}
	if st := mustStatus(t, inv, "sku"); st.Remaining != 3 || st.Reserved != 0 {
		t.Fatalf("status %+v", st)
	}
	if ops := outboxOps(t, inv, "sku"); ops["reserve"] != 2 || ops["release"] != 2 {
		t.Fatalf("outbox %v", ops)
	}
}

// One request id raced from many goroutines when its home bucket is empty,
// so that every racer borrows from the other buckets: the racers that found
// nothing left to borrow (their siblings had it in flight) must not record
// SoldOut against the request (they did, with 6 units for sale); one
// reservation, and once the consumer has run every borrowed unit is back on
// sale.
func TestRacedRetriesWhileBorrowing(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		inv := newInv(t, rdb, WithBuckets(4), WithLocalSoldOut(0), WithPerUserLimit(2))
		inv.moveWait = 20 * time.Second // a failure guard: moves land in milliseconds
		load(t, inv, "sku", 8)
		var a, b string
		for i := 0; b == ""; i++ {
			u := "user" + itoa(i)
			switch {
			case a == "":
				a = u
			case homeBucket(u, 4) == homeBucket(a, 4):
				b = u
			}
		}
		for i := 0; i < 2; i++ { // empty the shared home bucket
			if res, _ := inv.Reserve(ctx, "sku", a, "ra"+itoa(i), 1); res.Outcome != Reserved {
				t.Fatalf("emptying home: %+v", res)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		firsts := 0
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := inv.Reserve(ctx, "sku", b, "rb", 1)
				if err != nil || res.Outcome != Reserved {
					t.Errorf("%+v %v", res, err)
					return
				}
				if !res.Duplicate {
					mu.Lock()
					firsts++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firsts != 1 {
			t.Fatalf("%d first answers", firsts)
		}
		store := newSQLite(t)
		store.SetStock(ctx, "sku", 8)
		drain(t, newConsumer(t, inv, store))
		st := mustStatus(t, inv, "sku")
		if st.InFlight != 0 || st.Reserved != 3 || st.Remaining != 5 {
			t.Fatalf("status %+v", st)
		}
		if rep, err := inv.Reconcile(ctx, "sku", store, ""); err != nil || !rep.Clean() {
			t.Fatalf("reconcile %v %v", rep, err)
		}
	})
}

// An entry the sink keeps refusing with a plain error (not ErrPoison),
// left pending by a consumer that restarted: the new consumer claims it
// first at every pass. It must not stop the entries behind it from being
// read and applied, and once they are, it is dead-lettered.
func TestFailingClaimedEntryDoesNotBlockNewOnes(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	sink := SinkFunc(func(ctx context.Context, ev Event) error {
		if ev.RequestID == "bad" {
			return errors.New("constraint violated")
		}
		return store.Apply(ctx, ev)
	})
	inv.Reserve(ctx, "sku", "u0", "bad", 1)
	first := newConsumer(t, inv, sink, WithConsumerName("old"))
	first.Pass(ctx) // "bad" fails and stays pending with "old"
	inv.Reserve(ctx, "sku", "u1", "r1", 1)
	inv.Reserve(ctx, "sku", "u2", "r2", 1)
	c := newConsumer(t, inv, sink, WithConsumerName("new"), WithClaimIdle(0), WithMaxDeliveries(3))
	for i := 0; i < 10; i++ {
		c.Pass(ctx)
	}
	orders := ordersByID(t, store, "sku")
	if len(orders) != 2 {
		t.Fatalf("%d orders after 10 passes: the failing entry blocks the ones behind it (%+v)", len(orders), c.Stats())
	}
	if s := c.Stats(); s.DeadLettered != 1 {
		t.Fatalf("stats %+v", s)
	}
}
