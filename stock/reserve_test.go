package stock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// 10,000 buyers, 100 units: exactly 100 reservations, one per user, each
// with its outbox entry; on a cluster also with the stock spread over buckets.
func TestReserveExactUnderConcurrency(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, buckets := range []int{1, 4} {
			if _, cluster := rdb.(*redis.ClusterClient); buckets > 1 && !cluster {
				continue // buckets are for clusters; one node runs them unchanged
			}
			t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) {
				inv := newInv(t, rdb, WithBuckets(buckets), WithLocalSoldOut(0))
				load(t, inv, "sku", 100)
				const buyers = 10000
				var reserved, soldOut atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, buyers)
				// All buyers run at once; a gate keeps the number of calls in
				// flight within what the client's connection pool serves
				// before its pool timeout on a loaded machine.
				gate := make(chan struct{}, 256)
				for i := 0; i < buyers; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						gate <- struct{}{}
						defer func() { <-gate }()
						user := fmt.Sprintf("u%d", i%5000) // two requests per user
						res, err := inv.Reserve(context.Background(), "sku", user, fmt.Sprintf("r%d", i), 1)
						if err != nil {
							errs <- err
							return
						}
						switch res.Outcome {
						case Reserved:
							reserved.Add(1)
						case SoldOut:
							soldOut.Add(1)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				if reserved.Load() != 100 {
					t.Fatalf("reserved %d, want exactly 100", reserved.Load())
				}
				st := mustStatus(t, inv, "sku")
				if st.Remaining != 0 || st.Reserved != 100 || st.Sold != 0 || st.Remaining+st.Reserved+st.Sold+st.InFlight != 100 {
					t.Fatalf("status %+v", st)
				}
				if ops := outboxOps(t, inv, "sku"); ops["reserve"] != 100 {
					t.Fatalf("outbox %v, want 100 reserve entries", ops)
				}
				held := map[string]int64{}
				for b := 0; b < buckets; b++ {
					for u, n := range inv.rdb.HGetAll(context.Background(), inv.keys("sku", b).users).Val() {
						var x int64
						fmt.Sscan(n, &x)
						held[u] += x
					}
				}
				for u, n := range held {
					if n > 1 {
						t.Fatalf("user %s holds %d", u, n)
					}
				}
			})
		}
	})
}

func TestReserveRetryReturnsFirstAnswer(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		inv := newInv(t, rdb, WithBuckets(3))
		load(t, inv, "sku", 5)
		ctx := context.Background()
		var firsts atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := inv.Reserve(ctx, "sku", "alice", "req-1", 1)
				if err != nil || res.Outcome != Reserved {
					t.Errorf("retry %d: %+v %v", i, res, err)
					return
				}
				if !res.Duplicate {
					firsts.Add(1)
				}
			}()
		}
		wg.Wait()
		if firsts.Load() != 1 {
			t.Fatalf("%d first answers, want 1", firsts.Load())
		}
		if st := mustStatus(t, inv, "sku"); st.Reserved != 1 || st.Remaining != 4 {
			t.Fatalf("status %+v", st)
		}
		if ops := outboxOps(t, inv, "sku"); ops["reserve"] != 1 {
			t.Fatalf("outbox %v", ops)
		}
		// A rejected request is remembered too: its retry is not a new try.
		res, _ := inv.Reserve(ctx, "sku", "alice", "req-2", 1)
		if res.Outcome != LimitReached || res.Duplicate {
			t.Fatalf("second purchase: %+v", res)
		}
		inv.Release(ctx, "sku", "req-1")
		res, _ = inv.Reserve(ctx, "sku", "alice", "req-2", 1)
		if res.Outcome != LimitReached || !res.Duplicate {
			t.Fatalf("retry of a refused request: %+v", res)
		}
	})
}

func TestPerUserLimit(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	for _, limit := range []int64{1, 3} {
		inv := newInv(t, rdb, WithPerUserLimit(limit), WithPrefix(fmt.Sprintf("%s%d:", nsFor(t), limit)))
		load(t, inv, "sku", 100)
		got := int64(0)
		for i := 0; i < 5; i++ {
			res, err := inv.Reserve(ctx, "sku", "bob", fmt.Sprintf("r%d", i), 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == Reserved {
				got++
			} else if res.Outcome != LimitReached {
				t.Fatalf("outcome %v", res.Outcome)
			}
		}
		if got != limit {
			t.Fatalf("limit %d: got %d", limit, got)
		}
		// Two units at once count as two.
		res, _ := inv.Reserve(ctx, "sku", "carol", "big", limit+1)
		if res.Outcome != LimitReached {
			t.Fatalf("qty above the limit: %v", res.Outcome)
		}
	}
}

func TestSaleWindow(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb, WithLocalSoldOut(0))
	opens := time.Now().Add(time.Hour)
	if err := inv.Load(ctx, "later", 10, Window{Start: opens}); err != nil {
		t.Fatal(err)
	}
	res, err := inv.Reserve(ctx, "later", "u", "r", 1)
	if err != nil || res.Outcome != NotOnSale || res.Opens.UnixMilli() != opens.UnixMilli() {
		t.Fatalf("early: %+v %v", res, err)
	}
	if err := inv.Load(ctx, "over", 10, Window{Start: time.Now().Add(-time.Hour), End: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if res, err := inv.Reserve(ctx, "over", "u", "r", 1); err != nil || res.Outcome != NotOnSale {
		t.Fatalf("late: %+v %v", res, err)
	}
	if res, err := inv.Reserve(ctx, "never", "u", "r", 1); err != nil || res.Outcome != NotOnSale {
		t.Fatalf("not loaded: %+v %v", res, err)
	}
	// Neither was recorded: nothing was decided about the request.
	if n := rdb.HLen(ctx, inv.keys("later", 0).reqs).Val(); n != 0 {
		t.Fatalf("%d records", n)
	}
	// Same sale again: no-op; a different one: refused.
	if err := inv.Load(ctx, "later", 10, Window{Start: opens}); err != nil {
		t.Fatal(err)
	}
	if err := inv.Load(ctx, "later", 11, Window{Start: opens}); !errors.Is(err, ErrSaleExists) {
		t.Fatalf("reload: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 10)
	huge := strings.Repeat("x", MaxIDLen+1)
	for _, c := range []struct {
		name string
		err  error
		call func() error
	}{
		{"empty sku", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "", "u", "r", 1); return err }},
		{"brace sku", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "a{b}", "u", "r", 1); return err }},
		{"huge sku", ErrInvalidArgument, func() error { return inv.Load(ctx, huge, 1, Window{}) }},
		{"empty user", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "", "r", 1); return err }},
		{"huge user", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", huge, "r", 1); return err }},
		{"empty id", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "u", "", 1); return err }},
		{"huge id", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "u", huge, 1); return err }},
		{"huge id release", ErrInvalidArgument, func() error { _, err := inv.Release(ctx, "sku", huge); return err }},
		{"zero qty", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "u", "r", 0); return err }},
		{"negative qty", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "u", "r", -3); return err }},
		{"qty above stock", ErrInvalidArgument, func() error { _, err := inv.Reserve(ctx, "sku", "u", "r", 11); return err }},
		{"negative stock", ErrInvalidArgument, func() error { return inv.Load(ctx, "neg", -1, Window{}) }},
		{"backwards window", ErrInvalidArgument, func() error {
			return inv.Load(ctx, "w", 1, Window{Start: time.Now(), End: time.Now().Add(-time.Hour)})
		}},
		{"unknown release", ErrUnknownRequest, func() error { _, err := inv.Release(ctx, "sku", "nope"); return err }},
		{"status of nothing", ErrNoSale, func() error { _, err := inv.Status(ctx, "nothing"); return err }},
	} {
		if err := c.call(); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	for _, o := range []Option{WithBuckets(0), WithPerUserLimit(0), WithHoldFor(-1), WithPrefix("a{:"), WithPrefix("no-separator")} {
		if _, err := New(rdb, o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("option: %v", err)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	// A client configured with other buckets than the sale is told so.
	other := newInv(t, rdb, WithBuckets(2))
	if _, err := other.Reserve(ctx, "sku", "u", "r", 1); !errors.Is(err, ErrBucketsMismatch) {
		t.Errorf("buckets: %v", err)
	}
}

// Quantities travel through Lua numbers (doubles) and cjson, which keeps 14
// significant digits: a stock or quantity beyond MaxQty would be rounded in
// the sale's records and a release would return other units than were taken.
// Such quantities are refused before anything reaches Redis.
func TestQuantitiesBeyondMaxQtyAreRefused(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	const huge = int64(123456789012345)
	if err := inv.Load(ctx, "huge-stock", huge, Window{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Load of %d units: %v, want ErrInvalidArgument", huge, err)
	}
	// The per-user limit is written into the sale by Load.
	big := newInv(t, rdb, WithPerUserLimit(MaxQty))
	load(t, big, "sku-max", MaxQty)
	if _, err := big.Reserve(ctx, "sku-max", "u", "r", huge); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Reserve of %d units: %v, want ErrInvalidArgument", huge, err)
	}
	if _, err := New(rdb, WithPerUserLimit(huge)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("WithPerUserLimit(%d): %v, want ErrInvalidOption", huge, err)
	}
	// MaxQty itself round-trips exactly: reserve it all, release it, all back.
	if r, err := big.Reserve(ctx, "sku-max", "u", "all", MaxQty); err != nil || r.Outcome != Reserved {
		t.Fatalf("Reserve(MaxQty) = %+v, %v", r, err)
	}
	if _, err := big.Release(ctx, "sku-max", "all"); err != nil {
		t.Fatal(err)
	}
	st, err := big.Status(ctx, "sku-max")
	if err != nil {
		t.Fatal(err)
	}
	if st.Remaining != MaxQty {
		t.Fatalf("after releasing everything: %+v, want %d remaining", st, MaxQty)
	}
}
