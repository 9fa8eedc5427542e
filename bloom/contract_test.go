package bloom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestRedisGoneContract: with Redis gone, a Redis filter's and a Fleet's
// calls fail with an error matching ErrRedis that names the
// prefix once, the Fleet's lost subscription reaches WithErrorHandler, and
// MayContain still answers "maybe".
func TestRedisGoneContract(t *testing.T) {
	s := redistest.Start(t)
	rdb := redistest.FastFail(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	handled := make(chan error, 16)
	report := WithErrorHandler(func(err error) {
		select {
		case handled <- err:
		default:
		}
	})
	r, err := NewRedis(ctx, rdb, "contract", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFleet(ctx, rdb, "contract-fleet", 1000, 0.01, report, WithHealthCheck(50*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.Kill()

	apicheck.RedisFailure(t, ErrRedis, "Redis.Add", r.Add(ctx, "a"))
	maybe, err := r.MayContain(ctx, "a")
	apicheck.RedisFailure(t, ErrRedis, "Redis.MayContain", err)
	if !maybe {
		t.Error("Redis.MayContain said no with Redis gone")
	}
	apicheck.RedisFailure(t, ErrRedis, "Fleet.Add", f.Add(ctx, "a"))
	if maybe, _ := f.MayContain(ctx, "never-added"); !maybe {
		t.Error("Fleet.MayContain said no with Redis gone")
	}
	select {
	case err := <-handled:
		if err == nil {
			t.Error("WithErrorHandler was handed a nil error")
		}
	case <-ctx.Done():
		t.Fatal("the Fleet's lost subscription never reached WithErrorHandler")
	}
}

// TestOptionsOfOtherConstructorsAreRefused: an option given to a filter it
// does not configure is an error wrapping ErrInvalidOption, not ignored.
func TestOptionsOfOtherConstructorsAreRefused(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	for name, opt := range map[string]Option{
		"WithHealthCheck":  WithHealthCheck(time.Second, time.Second),
		"WithLogger":       WithLogger(nil),
		"WithErrorHandler": WithErrorHandler(func(error) {}),
		"WithBuildLease":   WithBuildLease(time.Second),
	} {
		if _, err := NewLocal(100, 0.01, opt); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "configures") {
			t.Errorf("NewLocal(%s): %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := NewRedis(ctx, rdb, "wrong", 100, 0.01, WithHealthCheck(time.Second, time.Second)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("NewRedis(WithHealthCheck): %v, want ErrInvalidOption", err)
	}
	f, err := NewFleet(ctx, rdb, "right", 100, 0.01, WithHealthCheck(time.Second, time.Second), WithBuildLease(time.Second), WithLogger(nil))
	if err != nil {
		t.Fatalf("NewFleet with its own options: %v", err)
	}
	f.Close()
}
