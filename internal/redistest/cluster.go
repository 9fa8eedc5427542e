package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of three masters (no replicas) with all 16384
// slots assigned.
type Cluster struct {
	Masters []*Server
	t       testing.TB
}

// StartCluster starts three cluster-enabled servers, assigns the slots evenly,
// joins them and waits for cluster_state:ok on every node. It skips the test
// when redis-server is missing (fails under CACHEGUARD_REQUIRE_REDIS=1).
func StartCluster(t testing.TB) (*Cluster, redis.UniversalClient) {
	t.Helper()
	NeedServer(t)
	return startCluster(t, Start)
}

// StartClusterTLS is StartCluster with TLS only (StartTLS), on the client
// side too.
func StartClusterTLS(t testing.TB) (*Cluster, redis.UniversalClient) {
	t.Helper()
	NeedTLS(t)
	return startCluster(t, StartTLS)
}

// starter starts one server: Start or StartTLS.
type starter func(t testing.TB, extra ...string) *Server

func startCluster(t testing.TB, start starter) (*Cluster, redis.UniversalClient) {
	t.Helper()
	cl := &Cluster{t: t}
	for i := 0; i < 3; i++ {
		cl.Masters = append(cl.Masters, start(t,
			"cluster-enabled", "yes",
			"cluster-config-file", "nodes.conf",
			"cluster-node-timeout", "2000",
			"cluster-require-full-coverage", "yes",
		))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.form(ctx); err != nil {
		t.Fatalf("redistest: forming cluster: %v", err)
	}
	return cl, cl.Client()
}

func (cl *Cluster) form(ctx context.Context) error {
	const slots = 16384
	per := slots / len(cl.Masters)
	first := cl.Masters[0]
	for i, m := range cl.Masters {
		c := ClientLike(m.Options())
		lo, hi := i*per, (i+1)*per-1
		if i == len(cl.Masters)-1 {
			hi = slots - 1
		}
		err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			host, port := splitAddr(first.Addr)
			err = c.Do(ctx, "CLUSTER", "MEET", host, port).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("node %s: %w", m.Addr, err)
		}
	}
	for _, m := range cl.Masters {
		if err := waitClusterOK(ctx, m, len(cl.Masters)); err != nil {
			return err
		}
	}
	return nil
}

func waitClusterOK(ctx context.Context, s *Server, nodes int) error {
	addr := s.Addr
	c := ClientLike(s.Options())
	defer c.Close()
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") &&
			strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", nodes)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s never reached cluster_state:ok (last: %v %q)", addr, err, info)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func splitAddr(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}

// Addrs returns the masters' addresses.
func (cl *Cluster) Addrs() []string {
	var a []string
	for _, m := range cl.Masters {
		a = append(a, m.Addr)
	}
	return a
}

// Client returns a new cluster client, closed when the test ends.
func (cl *Cluster) Client() *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), TLSConfig: cl.Masters[0].Options().TLSConfig})
	cl.t.Cleanup(func() { c.Close() })
	return c
}

// Nodes starts n independent servers (for Redlock and similar).
func Nodes(t testing.TB, n int) []*Server {
	t.Helper()
	NeedServer(t)
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(t)
	}
	return out
}

// Topology names a server layout a test can run against.
type Topology struct {
	Name string
	// New starts the layout and returns a client for it.
	New func(t testing.TB) redis.UniversalClient
}

// Topologies returns the single-node and cluster layouts, so a test can run
// the same body against both with t.Run.
func Topologies() []Topology {
	return []Topology{
		{Name: "single", New: func(t testing.TB) redis.UniversalClient { _, c := Single(t); return c }},
		{Name: "cluster", New: func(t testing.TB) redis.UniversalClient { _, c := StartCluster(t); return c }},
	}
}

// SentinelTopology is the Sentinel layout (a failover client), for tables
// that add it to Topologies where their feature applies.
func SentinelTopology() Topology {
	return Topology{Name: "sentinel", New: func(t testing.TB) redis.UniversalClient { _, c := StartSentinel(t); return c }}
}

// TLSTopologies are the single-node, cluster and Sentinel layouts with TLS
// only (StartTLS, StartClusterTLS, StartSentinelTLS), each started afresh.
func TLSTopologies() []Topology {
	return []Topology{
		{Name: "single", New: func(t testing.TB) redis.UniversalClient { return StartTLS(t).Client() }},
		{Name: "cluster", New: func(t testing.TB) redis.UniversalClient { _, c := StartClusterTLS(t); return c }},
		{Name: "sentinel", New: func(t testing.TB) redis.UniversalClient { _, c := StartSentinelTLS(t); return c }},
	}
}
