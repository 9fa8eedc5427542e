package cache

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// A Redis hit on one goroutine allocates no more than a bare GET and
// json.Unmarshal of the same value through the same client, its key built
// from a prefix and the caller's key as any cache-aside code does: the engine's
// bookkeeping (the flight shard, the node's queue, the breaker) allocates
// nothing of its own. A closure's variable that escaped on every command,
// not only when a batch was queued, once cost one allocation per Get.
func TestRedisHitAllocatesNoMoreThanABareGet(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	type row struct {
		ID    int64     `json:"id"`
		Name  string    `json:"name"`
		At    time.Time `json:"at"`
		Score float64   `json:"score"`
	}
	srv, _ := redistest.RealSingle(t)
	rdb := srv.Client()
	ctx := context.Background()
	want := row{ID: 7, Name: "seven", At: time.Unix(1700000000, 0).UTC(), Score: 0.5}
	raw, _ := json.Marshal(want)
	if err := rdb.Set(ctx, "bare:k", raw, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := New(rdb, Values[row]{}, WithPrefix("allocs:"), WithTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	load := func(context.Context, string) (row, error) { return want, nil }
	if v, err := c.Get(ctx, "k", load); err != nil || v != want {
		t.Fatal(v, err)
	}
	prefix, key := "bare:", string([]byte("k")) // not a constant
	bare := testing.AllocsPerRun(500, func() {
		data, err := rdb.Get(ctx, prefix+key).Bytes()
		var r row
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil || r != want {
			t.Fatal(r, err)
		}
	})
	never := func(context.Context, string) (row, error) { t.Fatal("loaded on a hit"); return row{}, nil }
	mine := testing.AllocsPerRun(500, func() {
		if v, err := c.Get(ctx, "k", never); err != nil || v != want {
			t.Fatal(v, err)
		}
	})
	t.Logf("allocations per hit: bare GET + json %v, Get %v", bare, mine)
	if mine > bare {
		t.Fatalf("a Redis hit allocates %v times, a bare GET + json.Unmarshal %v", mine, bare)
	}
}
