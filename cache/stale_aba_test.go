package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A refresh that started before a MarkStale must not land, even when another
// refresh has re-marked the entry in between (the header it compares against
// would otherwise look unchanged: A-B-A). The cache converges to the row as of
// the last MarkStale.
func TestMarkStaleABA(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a := newCache[string](t, rdb)
		b := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
		var mu sync.Mutex
		db := "v1"
		row := func() string { mu.Lock(); defer mu.Unlock(); return db }
		setRow := func(v string) { mu.Lock(); db = v; mu.Unlock() }

		if v, err := a.Get(ctx, "k", func(context.Context, string) (string, error) { return row(), nil }); err != nil || v != "v1" {
			t.Fatalf("first Get = %q, %v", v, err)
		}
		read := make(chan string, 2)
		release := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		var calls sync.Mutex
		n := 0
		load := func(context.Context, string) (string, error) {
			calls.Lock()
			i := n
			n++
			calls.Unlock()
			v := row()
			read <- v
			<-release[i]
			return v, nil
		}
		filledA, filledB := make(chan bool, 1), make(chan bool, 1)
		a.hooks().OnFill = func(_ string, ok bool) { filledA <- ok }
		b.hooks().OnFill = func(_ string, ok bool) { filledB <- ok }

		setRow("v2")
		if err := a.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if v, _ := a.Get(ctx, "k", load); v != "v1" {
			t.Fatalf("stale read = %q", v)
		}
		if v := <-read; v != "v2" { // refresh 1 has read v2 and is slow
			t.Fatalf("refresh 1 read %q", v)
		}
		setRow("v3")
		if err := a.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		if v, _ := b.Get(ctx, "k", load); v != "v1" {
			t.Fatalf("stale read = %q", v)
		}
		if v := <-read; v != "v3" { // refresh 2 re-marked the entry and read v3
			t.Fatalf("refresh 2 read %q", v)
		}
		close(release[0])
		if <-filledA {
			t.Error("the refresh that started before the second MarkStale landed")
		}
		close(release[1])
		if !<-filledB {
			t.Error("the refresh that started after the second MarkStale was refused")
		}
		raw, _ := rdb.Get(ctx, prefixFor(t)+"k").Bytes()
		if e, ok := wire.DecodeEnvelope(raw); !ok || string(e.Payload) != `"v3"` && string(e.Payload) != "v3" {
			t.Fatalf("Redis holds %q, want v3", raw)
		}
	})
}
