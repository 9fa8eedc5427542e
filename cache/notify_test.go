package cache

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// ownClient returns a client of its own (own connections) to rdb's server or
// cluster, as another process would have.
func ownClient(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	var c redis.UniversalClient
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		c = redis.NewClusterClient(r.Options())
	case *redis.Client:
		c = redistest.ClientLike(r.Options())
	default:
		t.Fatalf("unexpected client %T", rdb)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wakeLog records how lease waiters woke.
type wakeLog struct {
	notified, polled atomic.Int64
	marked           chan string
}

func newWakeLog() *wakeLog { return &wakeLog{marked: make(chan string, 16)} }

func (w *wakeLog) hooks() *hooks {
	return &hooks{
		NotifiedPoll: time.Hour, // a wake-up can only come from a fill message
		OnWake: func(_ string, notified bool) {
			if notified {
				w.notified.Add(1)
			} else {
				w.polled.Add(1)
			}
		},
		OnWaitMarked: func(k string) { w.marked <- k },
	}
}

// A waiter in another Cache instance (its own client, as another process)
// is woken by the fill's message, not by a poll.
func TestFillWakesWaiterByNotification(t *testing.T) {
	redistest.NeedServer(t) // miniredis lacks SPUBLISH, and its PUBLISH does not reach scripts' subscribers
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		filler := newCache[string](t, rdb)
		log := newWakeLog()
		waiter := newCache[string](t, ownClient(t, rdb), withHooks(log.hooks()))
		loading := make(chan struct{})
		release := make(chan struct{})
		fillerDone := make(chan error, 1)
		go func() {
			_, err := filler.Get(ctx, "k", func(context.Context, string) (string, error) {
				close(loading)
				<-release
				return "v", nil
			})
			fillerDone <- err
		}()
		<-loading
		got := make(chan string, 1)
		go func() {
			v, err := waiter.Get(ctx, "k", func(context.Context, string) (string, error) {
				t.Error("the waiter loaded")
				return "", nil
			})
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		k := <-log.marked // the waiter is listening and has marked the placeholder
		if k != prefixFor(t)+"k" {
			t.Fatalf("marked %q", k)
		}
		close(release)
		if v := <-got; v != "v" {
			t.Fatalf("waiter got %q", v)
		}
		if err := <-fillerDone; err != nil {
			t.Fatal(err)
		}
		if n, p := log.notified.Load(), log.polled.Load(); n != 1 || p != 0 {
			t.Fatalf("waiter woke %d times by notification, %d by poll; want 1 and 0", n, p)
		}
	})
}

// GetMany's waiters are woken by notification too.
func TestFillWakesGetManyWaiterByNotification(t *testing.T) {
	redistest.NeedServer(t)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		filler := newCache[string](t, rdb)
		log := newWakeLog()
		waiter := newCache[string](t, ownClient(t, rdb), withHooks(log.hooks()))
		keys := []string{"a", "b", "c"}
		loading := make(chan struct{})
		release := make(chan struct{})
		fillerDone := make(chan error, 1)
		go func() {
			_, err := filler.GetMany(ctx, keys, func(_ context.Context, ks []string) (map[string]string, error) {
				close(loading)
				<-release
				out := map[string]string{}
				for _, k := range ks {
					out[k] = "v" + k
				}
				return out, nil
			})
			fillerDone <- err
		}()
		<-loading
		got := make(chan map[string]string, 1)
		go func() {
			m, err := waiter.GetMany(ctx, keys, func(context.Context, []string) (map[string]string, error) {
				t.Error("the waiter loaded")
				return nil, nil
			})
			if err != nil {
				t.Error(err)
			}
			got <- m
		}()
		for range keys {
			<-log.marked
		}
		close(release)
		m := <-got
		for _, k := range keys {
			if m[k] != "v"+k {
				t.Fatalf("waiter got %v", m)
			}
		}
		if err := <-fillerDone; err != nil {
			t.Fatal(err)
		}
		if p := log.polled.Load(); p != 0 || log.notified.Load() == 0 {
			t.Fatalf("waiter woke %d times by notification, %d by poll", log.notified.Load(), p)
		}
	})
}

// TestWakeLatency measures, when CACHEGUARD_WAKE_LATENCY=N is set, the time
// from a filler's loader returning to a waiter in another Cache instance (own
// client) returning the value, over N rounds, with fill messages and with
// polling only. The loader takes 20 ms after the waiter starts waiting, as a
// database query would. It asserts nothing: timing belongs in figures.
func TestWakeLatency(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("CACHEGUARD_WAKE_LATENCY"))
	if rounds <= 0 {
		t.Skip("set CACHEGUARD_WAKE_LATENCY=rounds to measure")
	}
	redistest.NeedServer(t)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, mode := range []string{"notify", "poll"} {
			waitCh := make(chan struct{}, 1)
			h := &hooks{NoFillNotify: mode == "poll"}
			signal := func(string) {
				select {
				case waitCh <- struct{}{}:
				default:
				}
			}
			if mode == "poll" {
				h.OnLeaseWait = signal
			} else {
				h.OnWaitMarked = signal
			}
			filler := newCache[string](t, rdb)
			waiter := newCache[string](t, ownClient(t, rdb), withHooks(h))
			lat := make([]time.Duration, 0, rounds)
			for i := range rounds {
				ctx := context.Background()
				key := mode + strconv.Itoa(i)
				for len(waitCh) > 0 {
					<-waitCh
				}
				var returned atomic.Int64
				loading := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					filler.Get(ctx, key, func(context.Context, string) (string, error) {
						close(loading)
						<-waitCh
						time.Sleep(20 * time.Millisecond) // the query
						returned.Store(time.Now().UnixNano())
						return "v", nil
					})
				}()
				<-loading
				if _, err := waiter.Get(ctx, key, func(context.Context, string) (string, error) { return "w", nil }); err != nil {
					t.Fatal(err)
				}
				end := time.Now().UnixNano()
				<-done
				lat = append(lat, time.Duration(end-returned.Load()))
			}
			slices.Sort(lat)
			t.Logf("%s: wake-up after the loader returned over %d rounds: median %v, p90 %v, max %v",
				mode, rounds, lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)-1])
		}
	})
}
