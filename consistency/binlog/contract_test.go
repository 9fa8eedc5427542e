package binlog

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestRedisGoneContract: with Redis gone, RedisPositions fails with an
// error matching ErrRedis that names the prefix once.
func TestRedisGoneContract(t *testing.T) {
	s := redistest.Start(t)
	rdb := redistest.FastFail(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps := RedisPositions(rdb, "contract:binlog")
	s.Kill()
	_, _, err := ps.Load(ctx)
	apicheck.RedisFailure(t, ErrRedis, "RedisPositions.Load", err)
	apicheck.RedisFailure(t, ErrRedis, "RedisPositions.Save", ps.Save(ctx, Position{File: "bin.000001", Offset: 4}))
}
