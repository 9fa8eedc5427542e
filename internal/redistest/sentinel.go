package redistest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a master, its replica and three Sentinels watching them
// (quorum 2), for tests of a redis.NewFailoverClient. The Sentinels declare
// a master down after sentinelDownAfter without a reply, so a killed master
// is replaced within a few seconds.
type Sentinel struct {
	// Name is the master's name at the Sentinels.
	Name string
	// Nodes are the data nodes: Nodes[0] started as the master, Nodes[1] as
	// its replica. Roles swap with failovers; CurrentMaster tells which.
	Nodes     []*Server
	Sentinels []*Server
	t         testing.TB
}

const (
	sentinelName      = "mymaster"
	sentinelDownAfter = "1000"
	// sentinelFailoverTimeout also spaces two failovers of one master.
	sentinelFailoverTimeout = "3000"
	sentinelTimeout         = 60 * time.Second
)

// StartSentinel starts the topology and waits until every Sentinel knows the
// replica and the other Sentinels (a failover needs both). It skips the
// test without redis-server, like StartCluster.
func StartSentinel(t testing.TB) (*Sentinel, redis.UniversalClient) {
	t.Helper()
	NeedServer(t)
	return startSentinel(t, false)
}

// StartSentinelTLS is StartSentinel with TLS only (StartTLS) on the data
// nodes and the Sentinels, and on the client side too.
func StartSentinelTLS(t testing.TB) (*Sentinel, redis.UniversalClient) {
	t.Helper()
	NeedTLS(t)
	return startSentinel(t, true)
}

func startSentinel(t testing.TB, withTLS bool) (*Sentinel, redis.UniversalClient) {
	t.Helper()
	s := &Sentinel{Name: sentinelName, t: t}
	start := Start
	if withTLS {
		start = StartTLS
	}
	master, replica := replicated(t, start)
	s.Nodes = []*Server{master, replica}
	host, port := splitAddr(master.Addr)
	for i := 0; i < 3; i++ {
		s.Sentinels = append(s.Sentinels, launch(t, &Server{sentinel: []string{
			"sentinel monitor " + sentinelName + " " + host + " " + port + " 2",
			"sentinel down-after-milliseconds " + sentinelName + " " + sentinelDownAfter,
			"sentinel failover-timeout " + sentinelName + " " + sentinelFailoverTimeout,
			"sentinel parallel-syncs " + sentinelName + " 1",
		}, tls: withTLS}))
	}
	s.WaitReady()
	return s, s.Client()
}

// WaitReady waits until every Sentinel knows a healthy replica and the other
// Sentinels, as a failover needs.
func (s *Sentinel) WaitReady() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	for _, sn := range s.Sentinels {
		if err := s.waitDiscovered(ctx, sn); err != nil {
			s.t.Fatalf("redistest: %v", err)
		}
	}
}

// waitDiscovered polls the Sentinel sn until it lists a replica in good
// standing and two other Sentinels.
func (s *Sentinel) waitDiscovered(ctx context.Context, sn *Server) error {
	addr := sn.Addr
	c := redis.NewSentinelClient(sn.Options())
	defer c.Close()
	for {
		replicas, err1 := c.Replicas(ctx, s.Name).Result()
		sentinels, err2 := c.Sentinels(ctx, s.Name).Result()
		fit := 0
		for _, r := range replicas {
			if r["flags"] == "slave" && r["master-link-status"] == "ok" {
				fit++
			}
		}
		if err1 == nil && err2 == nil && fit >= 1 && len(sentinels) >= 2 {
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("sentinel %s never discovered the topology (%d replicas, %d sentinels: %v %v)",
				addr, len(replicas), len(sentinels), err1, err2)
		}
	}
}

// SentinelAddrs returns the Sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		out[i] = sn.Addr
	}
	return out
}

// Client returns a new failover client for the master, closed when the test
// ends.
func (s *Sentinel) Client() *redis.Client {
	return s.newClient(s.t)
}

// newClient returns a failover client closed when t ends.
func (s *Sentinel) newClient(t testing.TB) *redis.Client {
	c := redis.NewFailoverClient(s.Options())
	failoverSpecs.Store(c, s.spec())
	t.Cleanup(func() {
		failoverSpecs.Delete(c)
		c.Close()
	})
	return c
}

// Options are the options of a failover client for the master (TLS for a
// topology started with StartSentinelTLS).
func (s *Sentinel) Options() *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.SentinelAddrs(),
		TLSConfig: s.Sentinels[0].Options().TLSConfig}
}

// MasterAddr asks the first answering Sentinel for the master's address.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	var lastErr error
	for _, sn := range s.Sentinels {
		c := redis.NewSentinelClient(sn.Options())
		hp, err := c.GetMasterAddrByName(ctx, s.Name).Result()
		c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		lastErr = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", lastErr)
}

// CurrentMaster returns the data node the Sentinels name as master.
func (s *Sentinel) CurrentMaster() *Server {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	addr, err := s.MasterAddr(ctx)
	if err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	s.t.Fatalf("redistest: the sentinels name %s, not one of the nodes", addr)
	return nil
}

// Failover asks a Sentinel for a planned failover (SENTINEL FAILOVER) and
// waits until every Sentinel names the promoted node and it reports itself
// master. The demoted master is reconfigured as a replica by the Sentinels
// some seconds later; until then it still answers as a master. It returns
// the promoted node.
func (s *Sentinel) Failover() *Server {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	old := s.CurrentMaster()
	c := redis.NewSentinelClient(s.Sentinels[0].Options())
	defer c.Close()
	for {
		// Refused while a previous failover's timeout runs or the replica
		// is not yet reported fit (INPROG, NOGOODSLAVE): ask again.
		err := c.Failover(ctx, s.Name).Err()
		if err == nil {
			break
		}
		if serr := sleepCtx(ctx, 100*time.Millisecond); serr != nil {
			s.t.Fatalf("redistest: SENTINEL FAILOVER: %v", err)
		}
	}
	return s.waitNewMaster(ctx, old)
}

// KillMaster kills the master (SIGKILL) and waits until the Sentinels have
// promoted another node, which it returns. The killed node stays down.
func (s *Sentinel) KillMaster() *Server {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	old := s.CurrentMaster()
	old.Kill()
	return s.waitNewMaster(ctx, old)
}

// waitNewMaster polls until every Sentinel names a node other than old and
// that node reports role:master.
func (s *Sentinel) waitNewMaster(ctx context.Context, old *Server) *Server {
	s.t.Helper()
	for {
		addr, agreed := s.agreedMaster(ctx)
		if agreed && addr != old.Addr {
			for _, n := range s.Nodes {
				if n.Addr == addr {
					if err := waitInfo(ctx, n, "role:master"); err != nil {
						s.t.Fatalf("redistest: %v", err)
					}
					return n
				}
			}
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			s.t.Fatalf("redistest: the sentinels never replaced master %s (last: %s)", old.Addr, addr)
		}
	}
}

// agreedMaster returns the master address the Sentinels name, and whether
// they all name it.
func (s *Sentinel) agreedMaster(ctx context.Context) (string, bool) {
	first := ""
	for i, sn := range s.Sentinels {
		c := redis.NewSentinelClient(sn.Options())
		hp, err := c.GetMasterAddrByName(ctx, s.Name).Result()
		c.Close()
		if err != nil || len(hp) != 2 {
			return first, false
		}
		addr := net.JoinHostPort(hp[0], hp[1])
		if i == 0 {
			first = addr
		} else if addr != first {
			return first, false
		}
	}
	return first, true
}

// WaitDemoted waits until node reports itself a replica (after a failover
// the Sentinels reconfigure the old master some seconds later).
func (s *Sentinel) WaitDemoted(node *Server) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	if err := waitInfo(ctx, node, "role:slave"); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// spec is the topology's Spec.
func (s *Sentinel) spec() string {
	return "sentinel:" + s.Name + "@" + strings.Join(s.SentinelAddrs(), ",")
}
