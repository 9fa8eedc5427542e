package pubsub_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/lock"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	// Tests that kill servers or connections make go-redis log every failed
	// dial and read.
	redistest.MainQuiet(m)
}

// pubsubConns counts the connections of type pubsub on every master (CLIENT
// LIST TYPE pubsub).
// holdersName names the connections of the other process in
// TestOneConnectionPerMaster, which pubsubConns does not count.
const holdersName = "holders"

func pubsubConns(t *testing.T, cc *redis.ClusterClient) map[string]int {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		list, err := m.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			return err
		}
		n := 0
		for _, line := range strings.Split(list, "\n") {
			if line != "" && !strings.Contains(line, " name="+holdersName+" ") {
				n++
			}
		}
		mu.Lock()
		out[m.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// subscribers counts the subscribers of shard channel ch on its master.
func subscribers(t *testing.T, cc *redis.ClusterClient, ch string) int64 {
	t.Helper()
	ctx := context.Background()
	m, err := cc.MasterForKey(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	n, err := m.PubSubShardNumSub(ctx, ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[ch]
}

// One process with 20 caches with local tiers and a lock client on a
// three-master cluster, every one of them using every kind of subscription
// at once (the caches' invalidations, lease waits on keys of every master,
// lock waiters on every master), holds at most one pub/sub connection per
// master: the go-redis client's shared one.
func TestOneConnectionPerMaster(t *testing.T) {
	const caches = 20
	cl, _ := redistest.StartCluster(t)
	// The process measured; the holders, a process of their own (named,
	// so that their connections are not counted: their caches subscribe
	// too, to hear a Clear).
	rdb := cl.Client()
	other := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ClientName: holdersName})
	t.Cleanup(func() { other.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys := []string{"a", "b", "c", "d", "e", "f"} // on every master for every prefix, in practice
	release := make(chan struct{})
	var done sync.WaitGroup
	var closers []func()
	defer func() {
		close(release)
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		done.Wait()
	}()
	blocked := func(context.Context, string) (string, error) { <-release; return "v", nil }
	var channels []string
	for i := 0; i < caches; i++ {
		prefix := fmt.Sprintf("measure%d:", i)
		c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix(prefix), cache.WithLocal(1<<20), cache.WithLocalAdmitAll(),
			cache.WithLogger(logger), cache.WithWait(time.Minute), cache.WithFillLease(time.Minute), cache.WithLoadTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { c.Close() })
		holder, err := cache.New(other, cache.Values[string]{}, cache.WithPrefix(prefix), cache.WithLogger(logger),
			cache.WithFillLease(time.Minute), cache.WithLoadTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { holder.Close() })
		for _, k := range keys {
			done.Add(2)
			started := make(chan struct{})
			go func() {
				defer done.Done()
				holder.Get(ctx, k, func(ctx context.Context, k string) (string, error) { close(started); return blocked(ctx, k) })
			}()
			<-started // the holder has the lease
			go func() {
				defer done.Done()
				c.Get(ctx, k, blocked) // waits on the holder's lease
			}()
			channels = append(channels, prefix+k)
		}
	}
	lc, err := lock.New(rdb, lock.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, func() { lc.Close() })
	lh, err := lock.New(other, lock.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	closers = append(closers, func() { lh.Close() })
	for _, name := range keys {
		h, err := lh.Mutex(name).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { h.Unlock(context.Background()) })
		done.Add(1)
		go func() {
			defer done.Done()
			if h, err := lc.Mutex(name).Lock(ctx); err == nil {
				h.Unlock(context.Background())
			}
		}()
		channels = append(channels, lock.DefaultPrefix+"{"+name+"}:released")
	}
	// Wait until every lease waiter and lock waiter is subscribed.
	for {
		missing := 0
		for _, ch := range channels {
			if subscribers(t, rdb, ch) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d channels never subscribed", missing, len(channels))
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := pubsubConns(t, rdb)
	t.Logf("pub/sub connections per master (CLIENT LIST TYPE pubsub) with %d caches with local tiers, %d lease waits and %d lock waiters: %v",
		caches, caches*len(keys), len(keys), got)
	for addr, n := range got {
		if n > 1 {
			t.Errorf("master %s: %d pub/sub connections, want at most 1", addr, n)
		}
	}
}
