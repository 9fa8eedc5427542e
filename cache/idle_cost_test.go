package cache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// What a process costs Redis while idle does not grow with its caches: one
// client with 1, 20 and 200 caches (Redis only, with a local tier, with
// tags) holds at most a constant number of connections on each node beyond
// what the client held before any cache, and sends each node at most a
// constant number of commands per second while nothing is read. Measured on
// dedicated servers (no other test's traffic), per node, from the server's
// own counters (INFO stats, INFO clients).
func TestIdleCostIsConstantInCaches(t *testing.T) {
	redistest.NeedServer(t)
	const (
		// Beyond the client's own pool, per node: the shared pub/sub
		// connection, its master check (ROLE, cluster and Sentinel) and the
		// shared sync client (the version probe reaches every master).
		maxExtraConns = 4
		// Per node per second while idle: the shared pub/sub health PING
		// (with ROLE on a cluster) and the shared generation sync.
		maxIdleCmds = 6.0
	)
	topologies := []struct {
		name  string
		start func(t *testing.T) (rdb redis.UniversalClient, nodes []*redis.Client)
	}{
		{"single", func(t *testing.T) (redis.UniversalClient, []*redis.Client) {
			srv := redistest.Start(t)
			return srv.Client(), []*redis.Client{srv.Client()}
		}},
		{"cluster", func(t *testing.T) (redis.UniversalClient, []*redis.Client) {
			cl, rdb := redistest.StartCluster(t)
			var nodes []*redis.Client
			for _, addr := range cl.Addrs() {
				n := redis.NewClient(&redis.Options{Addr: addr})
				t.Cleanup(func() { n.Close() })
				nodes = append(nodes, n)
			}
			return rdb, nodes
		}},
	}
	kinds := []struct {
		name string
		make func(t *testing.T, rdb redis.UniversalClient, prefix string) (*Cache[string], error)
	}{
		{"redis-only", func(t *testing.T, rdb redis.UniversalClient, prefix string) (*Cache[string], error) {
			return New(rdb, Values[string]{}, WithPrefix(prefix), WithLogger(quietLogger()))
		}},
		{"local", func(t *testing.T, rdb redis.UniversalClient, prefix string) (*Cache[string], error) {
			return New(rdb, Values[string]{}, WithPrefix(prefix), WithLogger(quietLogger()), WithLocal(1<<16), WithLocalAdmitAll())
		}},
		{"tags", func(t *testing.T, rdb redis.UniversalClient, prefix string) (*Cache[string], error) {
			return New(rdb, Values[string]{Tags: func(string, string) []string { return []string{"t"} }},
				WithPrefix(prefix), WithLogger(quietLogger()), WithLocal(1<<16), WithLocalAdmitAll())
		}},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb, nodes := topo.start(t)
			ctx := t.Context()
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for _, kind := range kinds {
				t.Run(kind.name, func(t *testing.T) {
					for _, n := range []int{1, 20, 200} {
						conns0, pool0 := serverConns(t, nodes), poolConns(t, rdb, nodes)
						var caches []*Cache[string]
						for i := range n {
							c, err := kind.make(t, rdb, fmt.Sprintf("%s:%s:%d:", redistest.Name(t), kind.name, i))
							if err != nil {
								t.Fatal(err)
							}
							caches = append(caches, c)
						}
						for _, c := range caches {
							awaitSubscribed(t, c)
						}
						// Let start-up settle (first syncs, subscriptions).
						time.Sleep(1500 * time.Millisecond)
						conns, cmds := idleCost(t, nodes, 3*time.Second)
						pool := poolConns(t, rdb, nodes)
						for i := range nodes {
							extra := conns[i] - conns0[i] - (pool[i] - pool0[i])
							t.Logf("%s %s, %d caches, node %d: %d connections beyond the client's, %.1f commands/s idle",
								topo.name, kind.name, n, i, extra, cmds[i])
							if extra > maxExtraConns {
								t.Errorf("%d caches: node %d holds %d connections beyond the client's, want at most %d", n, i, extra, maxExtraConns)
							}
							if cmds[i] > maxIdleCmds {
								t.Errorf("%d caches: node %d got %.1f commands/s while idle, want at most %.0f", n, i, cmds[i], maxIdleCmds)
							}
						}
						for _, c := range caches {
							if err := c.Close(); err != nil {
								t.Fatal(err)
							}
						}
					}
				})
			}
		})
	}
}

// poolConns is how many connections rdb's own pool holds to each node.
func poolConns(t *testing.T, rdb redis.UniversalClient, nodes []*redis.Client) []int {
	t.Helper()
	out := make([]int, len(nodes))
	index := map[string]int{}
	for i, n := range nodes {
		index[n.Options().Addr] = i
	}
	switch r := rdb.(type) {
	case *redis.Client:
		out[0] = int(r.PoolStats().TotalConns)
	case *redis.ClusterClient:
		var mu sync.Mutex
		err := r.ForEachShard(t.Context(), func(_ context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			if i, ok := index[n.Options().Addr]; ok {
				out[i] = int(n.PoolStats().TotalConns)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// serverConns is each node's connected_clients, less the one asking.
func serverConns(t *testing.T, nodes []*redis.Client) []int {
	t.Helper()
	out := make([]int, len(nodes))
	for i, n := range nodes {
		out[i] = infoInt(t, n, "clients", "connected_clients") - 1
	}
	return out
}

// idleCost is each node's connections (less the asker's) and the commands
// per second it processed over d, less the asker's own.
func idleCost(t *testing.T, nodes []*redis.Client, d time.Duration) (conns []int, perSec []float64) {
	t.Helper()
	before := make([]int, len(nodes))
	for i, n := range nodes {
		before[i] = infoInt(t, n, "stats", "total_commands_processed")
	}
	time.Sleep(d)
	conns = serverConns(t, nodes)
	for i, n := range nodes {
		// Less the first INFO (counted once it ran) and the two of
		// serverConns.
		delta := infoInt(t, n, "stats", "total_commands_processed") - before[i] - 2
		perSec = append(perSec, float64(delta)/d.Seconds())
	}
	return conns, perSec
}

func infoInt(t *testing.T, n *redis.Client, section, field string) int {
	t.Helper()
	info, err := n.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			x, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return 0
}
