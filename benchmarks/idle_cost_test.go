package benchmarks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	rcache "github.com/go-redis/cache/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidisaside"
)

// TestIdleCost measures what N caches on one client cost a Redis server
// while nothing is read, for cacheguard and the libraries users compare it
// with, each as its documentation has a service hold several caches:
// go-redis/cache (N caches over one go-redis client), rueidisaside (one
// aside client, N typed caches over it) and cacheguard (N caches, Redis
// only, over one go-redis client). Each is read once per cache, then left
// alone; it prints, per library and N, the server's connections beyond the
// client's and its commands per second over 3 s (INFO clients and stats on
// a server of its own). Nothing is asserted (cache's
// TestIdleCostIsConstantInCaches asserts cacheguard's bound):
//
//	go test -run TestIdleCost -v .
func TestIdleCost(t *testing.T) {
	measurement(t)
	type lib struct {
		name string
		open func(t *testing.T, addr string, n int) (read func(i int) error, closeAll func())
	}
	ctx := context.Background()
	libs := []lib{
		{"cacheguard", func(t *testing.T, addr string, n int) (func(int) error, func()) {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			var cs []*cache.Cache[string]
			for i := range n {
				c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("idle:"+strconv.Itoa(i)+":"), cache.WithLogger(quietLog))
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			read := func(i int) error {
				_, err := cs[i].Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil })
				return err
			}
			return read, func() {
				for _, c := range cs {
					c.Close()
				}
				rdb.Close()
			}
		}},
		{"go-redis-cache", func(t *testing.T, addr string, n int) (func(int) error, func()) {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			var cs []*rcache.Cache
			for range n {
				cs = append(cs, rcache.New(&rcache.Options{Redis: rdb}))
			}
			read := func(i int) error {
				var v string
				return cs[i].Once(&rcache.Item{Ctx: ctx, Key: "idle:" + strconv.Itoa(i) + ":k", Value: &v, TTL: time.Minute,
					Do: func(*rcache.Item) (any, error) { return "v", nil }})
			}
			return read, func() { rdb.Close() }
		}},
		{"rueidisaside", func(t *testing.T, addr string, n int) (func(int) error, func()) {
			aside, err := rueidisaside.NewClient(rueidisaside.ClientOption{ClientOption: rueidis.ClientOption{InitAddress: []string{addr}}})
			if err != nil {
				t.Fatal(err)
			}
			var cs []rueidisaside.TypedCacheAsideClient[string]
			for range n {
				cs = append(cs, rueidisaside.NewTypedCacheAsideClient(aside,
					func(s *string) (string, error) { return *s, nil },
					func(s string) (*string, error) { return &s, nil }))
			}
			read := func(i int) error {
				_, err := cs[i].Get(ctx, time.Minute, "idle:"+strconv.Itoa(i)+":k", func(context.Context, string) (*string, error) {
					v := "v"
					return &v, nil
				})
				return err
			}
			return read, aside.Close
		}},
	}
	var out strings.Builder
	fmt.Fprintf(&out, "| library | caches | connections | idle commands/s |\n|---|---|---|---|\n")
	for _, l := range libs {
		for _, n := range []int{1, 20, 200} {
			srv := redistest.Start(t)
			admin := srv.Client()
			conns0 := infoField(t, admin, "clients", "connected_clients") - 1
			read, closeAll := l.open(t, srv.Addr, n)
			for i := range n {
				if err := read(i); err != nil {
					t.Fatalf("%s: %v", l.name, err)
				}
			}
			time.Sleep(1500 * time.Millisecond)
			c0 := infoField(t, admin, "stats", "total_commands_processed")
			time.Sleep(3 * time.Second)
			c1 := infoField(t, admin, "stats", "total_commands_processed")
			conns := infoField(t, admin, "clients", "connected_clients") - 1 - conns0
			fmt.Fprintf(&out, "| %s | %d | %d | %.1f |\n", l.name, n, conns, float64(c1-c0-1)/3)
			closeAll()
		}
	}
	t.Logf("idle cost, one client per process:\n%s", out.String())
}

func infoField(t *testing.T, c *redis.Client, section, field string) int {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no %s", field)
	return 0
}
