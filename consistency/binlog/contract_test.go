package binlog

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
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

// TestPositionValueIsWiresFormat: what the lease's scripts and Save write is
// what internal/wire reads (cacheguard inspect shows the tailer from it),
// and what Load reads back.
func TestPositionValueIsWiresFormat(t *testing.T) {
	_, rdb := redistest.Single(t)
	ctx := context.Background()
	const key = "format:binlog"
	ps := RedisPositions(rdb, key).(redisPositions)
	read := func() wire.BinlogPosition {
		t.Helper()
		b, err := rdb.Get(ctx, key).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		p, ok := wire.ParseBinlogPosition(b)
		if !ok {
			t.Fatalf("%s is not a position by wire's format", b)
		}
		return p
	}
	if held, _, err := ps.acquire(ctx, "tok", 5000); err != nil || !held {
		t.Fatalf("acquire: %v, %v", held, err)
	}
	if p := read(); p.Tailer != "tok" || p.UntilMS < time.Now().UnixMilli() || p.File != "" {
		t.Errorf("after acquire: %+v", p)
	}
	if err := ps.saveHeld(ctx, "tok", Position{File: "bin.000003", Offset: 77}); err != nil {
		t.Fatal(err)
	}
	if p := read(); p.Tailer != "tok" || p.File != "bin.000003" || p.Offset != 77 {
		t.Errorf("after save: %+v", p)
	}
	if err := ps.release(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	if p := read(); p.Tailer != "" || p.File != "bin.000003" {
		t.Errorf("after release: %+v", p)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ps.Save(ctx, Position{File: "bin.000004", Offset: 5}))
	if p, ok, err := ps.Load(ctx); err != nil || !ok || p != (Position{File: "bin.000004", Offset: 5}) || read().File != "bin.000004" {
		t.Errorf("Save then Load: %v %v %v", p, ok, err)
	}
}
