package stock

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestRedisGoneContract: with Redis gone, the inventory's calls fail with an
// error matching ErrRedis that names the prefix once, and
// the Redis failure that sends an Admission to its local limits reaches
// WithErrorHandler.
func TestRedisGoneContract(t *testing.T) {
	s := redistest.Start(t)
	rdb := redistest.FastFail(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inv := newInv(t, rdb)
	handled := make(chan error, 4)
	adm, err := NewAdmission(rdb, WithSKURate(Rate{Count: 100, Per: time.Second}), WithErrorHandler(func(err error) {
		select {
		case handled <- err:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Load(ctx, "contract", 10, Window{}); err != nil {
		t.Fatal(err)
	}
	s.Kill()

	_, err = inv.Reserve(ctx, "contract", "u1", "r1", 1)
	apicheck.RedisFailure(t, ErrRedis, "Inventory.Reserve", err)
	_, err = inv.Status(ctx, "contract")
	apicheck.RedisFailure(t, ErrRedis, "Inventory.Status", err)
	apicheck.RedisFailure(t, ErrRedis, "Inventory.Load", inv.Load(ctx, "contract2", 10, Window{}))
	if err := adm.Allow(ctx, "contract", "u1"); err != nil {
		t.Errorf("Admission.Allow with Redis gone: %v, want the local limit's yes", err)
	}
	select {
	case err := <-handled:
		apicheck.RedisFailure(t, ErrRedis, "Admission fallback (WithErrorHandler)", err)
	default:
		t.Error("the Admission's fallback did not reach WithErrorHandler")
	}
}
