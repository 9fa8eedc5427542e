package stock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestAdmissionLimits(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, err := NewAdmission(rdb, WithPrefix(nsFor(t)),
			WithSKURate(Rate{Count: 5, Per: time.Hour}),
			WithUserRate(Rate{Count: 1, Per: time.Hour}),
			WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Allow(ctx, "sku", "u0"); err != nil {
			t.Fatal(err)
		}
		if err := a.Allow(ctx, "sku", "u0"); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("second from one user: %v", err)
		}
		admitted := 1
		for i := 1; i < 10; i++ {
			if a.Allow(ctx, "sku", fmt.Sprintf("u%d", i)) == nil {
				admitted++
			}
		}
		if admitted != 5 {
			t.Fatalf("admitted %d, want the SKU's 5", admitted)
		}
		if s := a.Stats(); s.Fallbacks != 0 || s.Limited != 6 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// With Redis unreachable the gate narrows to the local share instead of
// opening, and Allow never hands a Redis error to the caller.
func TestAdmissionFallsBackLocally(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer dead.Close()
	a, err := NewAdmission(dead,
		WithSKURate(Rate{Count: 8, Per: time.Hour}),
		WithUserRate(Rate{Count: 1, Per: time.Hour}),
		WithInstances(2),
		WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admitted := 0
	for i := 0; i < 20; i++ {
		err := a.Allow(ctx, "sku", fmt.Sprintf("u%d", i))
		if err == nil {
			admitted++
		} else if !errors.Is(err, ErrRateLimited) {
			t.Fatalf("error %v", err)
		}
	}
	if admitted != 4 {
		t.Fatalf("admitted %d during the outage, want this process's 4 of 8", admitted)
	}
	if err := a.Allow(ctx, "other", "u0"); err != nil {
		t.Fatal(err)
	}
	if err := a.Allow(ctx, "other", "u0"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("same user again during the outage: %v", err)
	}
	if a.Stats().Fallbacks == 0 {
		t.Fatal("no fallback counted")
	}
}

// Once sold out is known, neither Admission nor Reserve asks Redis.
func TestLocalSoldOutSkipsRedis(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb, WithLocalSoldOut(time.Hour))
	load(t, inv, "sku", 1)
	inv.Reserve(ctx, "sku", "a", "ra", 1)
	if res, _ := inv.Reserve(ctx, "sku", "b", "rb", 1); res.Outcome != SoldOut || res.Local {
		t.Fatalf("first sold out: %+v", res)
	}
	a, _ := NewAdmission(rdb, WithInventory(inv), WithSKURate(Rate{Count: 100, Per: time.Second}), WithLogger(quiet))
	// From here on a closed client proves no call reaches Redis.
	offline := newInv(t, rdb)
	offline.soldOut.Store("sku", time.Now().Add(time.Hour))
	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	closed.Close()
	offline.rdb = closed
	if res, err := offline.Reserve(ctx, "sku", "c", "rc", 1); err != nil || res.Outcome != SoldOut || !res.Local {
		t.Fatalf("local answer: %+v %v", res, err)
	}
	if err := a.Allow(ctx, "sku", "c"); !errors.Is(err, ErrSoldOut) {
		t.Fatalf("admission: %v", err)
	}
	// A release clears this process's memory so the unit is sold again.
	inv.Release(ctx, "sku", "ra")
	if res, _ := inv.Reserve(ctx, "sku", "d", "rd", 1); res.Outcome != Reserved {
		t.Fatalf("after release: %+v", res)
	}
}
