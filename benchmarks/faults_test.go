package benchmarks

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The faults of BenchmarkFaultStorm, each on servers of its own (never the
// shared server, whose rows the other benchmarks keep between passes).

// faultEnv is one fault and the servers it happens to.
type faultEnv struct {
	// point aims a library's configuration at the fault's servers.
	point func(cfg *implConfig)
	// prepare, when set, runs before each storm, before its libraries
	// are opened: it puts the servers back into the state the fault
	// starts from.
	prepare func()
	// inject causes the fault and returns once it is over on the servers'
	// side: the server answers again, the flush is done, the Sentinels
	// agree on the promoted master. For a failover it also returns how
	// long the demoted master went on as a master after its replica was
	// promoted, until the Sentinels agreed (split); 0 for the others.
	inject func() (split time.Duration)
	// splits: the fault leaves two masters for a while, and a storm
	// reports inject's split.
	splits bool
	// can says whether the library can follow this fault at all.
	can func(lib library) bool
}

// faultNames are the faults, in table order.
var faultNames = []string{"restart", "flushall", "failover"}

// startFault starts the servers of the named fault for b.
func startFault(b *testing.B, name string) faultEnv {
	switch name {
	case "restart":
		// A crash and a restart without persistence: the server comes
		// back empty on the same address.
		srv := redistest.Start(b)
		return faultEnv{
			point:  func(cfg *implConfig) { cfg.addr = srv.Addr },
			inject: func() time.Duration { srv.Kill(); srv.Restart(); return 0 },
			can:    func(library) bool { return true },
		}
	case "flushall":
		srv := redistest.Start(b)
		admin := srv.Client()
		return faultEnv{
			point: func(cfg *implConfig) { cfg.addr = srv.Addr },
			inject: func() time.Duration {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := admin.FlushAll(ctx).Err(); err != nil {
					b.Errorf("FLUSHALL: %v", err)
				}
				return 0
			},
			can: func(library) bool { return true },
		}
	case "failover":
		// A planned failover (SENTINEL FAILOVER) of a master with one
		// replica and three Sentinels; clients follow the Sentinels.
		// Every storm fails over a master whose replica holds its rows
		// (rejoin).
		s, _ := redistest.StartSentinel(b)
		return faultEnv{
			point:   func(cfg *implConfig) { cfg.sentinel = s.Options() },
			prepare: func() { rejoin(b, s) },
			inject:  func() time.Duration { return failover(s) },
			splits:  true,
			can:     func(lib library) bool { return lib.sentinel },
		}
	}
	b.Fatalf("no fault %q", name)
	return faultEnv{}
}

// hungError is the error of a call that outlived its deadline by
// faultHangGrace: the library did not honour its context.
type hungError struct{}

func (hungError) Error() string { return "call did not return after its deadline" }

// errHung is the one hungError.
var errHung error = hungError{}

// boundedCall runs call with a context ending after d and waits for it at
// most d + faultHangGrace: a library that ignores its context shows as
// errHung (its goroutine is left behind), not as a hung benchmark.
func boundedCall[T any](d time.Duration, call func(ctx context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	t := time.NewTimer(d + faultHangGrace)
	defer t.Stop()
	select {
	case r := <-done:
		cancel()
		return r.v, r.err
	case <-t.C:
		cancel()
		var zero T
		return zero, errHung
	}
}

// closeBounded closes the library, waiting at most faultHangGrace × 5 for
// it: a hung library is left behind.
func closeBounded(c *cacheImpl) {
	done := make(chan struct{})
	go func() {
		c.close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * faultHangGrace):
	}
}

// failover fails the master over (SENTINEL FAILOVER) and returns how long
// the demoted master and the promoted replica were both masters before
// every Sentinel named the promoted one, as go-redis's failover clients
// learn it (each from its Sentinel's +switch-master): from the first INFO,
// polled every 2 ms, in which the replica reports itself master. A write
// the demoted master acknowledged in that time never reaches the promoted
// one (replication is asynchronous, and the replica stopped following it
// when it was promoted): Redis loses it.
func failover(s *redistest.Sentinel) time.Duration {
	master := s.CurrentMaster()
	var replica *redistest.Server
	for _, n := range s.Nodes {
		if n != master {
			replica = n
		}
	}
	c := redis.NewClient(replica.Options())
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var promoted time.Time
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for ctx.Err() == nil {
			if strings.Contains(replication(ctx, c), "role:master") {
				promoted = time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	s.Failover()
	agreed := time.Now()
	cancel()
	<-polled
	if promoted.IsZero() {
		return 0
	}
	return max(0, agreed.Sub(promoted))
}

// rejoin makes the node the Sentinels do not name master a replica of the
// one they do, and waits until it has synced. After a failover the demoted
// master goes on as a master of its own: the Sentinels reconfigure it only
// 8 s or more after it last reported its role (+convert-to-slave), longer
// than a storm, and meanwhile offer it for the next failover as if it were
// a replica. Without rejoin only the first storm of a run would fail over
// to a replica holding its rows; the next would be switched to a master
// that never saw them (as good as empty under the storm's fresh prefix: no
// stale row to read). rejoin does now what the Sentinels would do later.
func rejoin(b testing.TB, s *redistest.Sentinel) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	master := s.CurrentMaster()
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		b.Fatal(err)
	}
	// The full sync starts at once instead of after the 5 s a master waits
	// by default for more replicas to share a diskless transfer.
	mc := redis.NewClient(master.Options())
	defer mc.Close()
	if err := mc.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		b.Fatalf("rejoin: %v", err)
	}
	for _, n := range s.Nodes {
		if n == master {
			continue
		}
		c := redis.NewClient(n.Options())
		defer c.Close()
		if !strings.Contains(replication(ctx, c), "role:slave") {
			if err := c.ReplicaOf(ctx, host, port).Err(); err != nil {
				b.Fatalf("rejoin %s under %s: %v", n.Addr, master.Addr, err)
			}
		}
		for info := ""; !strings.Contains(info, "master_host:"+host) || !strings.Contains(info, "master_port:"+port) ||
			!strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_sync_in_progress:0"); info = replication(ctx, c) {
			if ctx.Err() != nil {
				b.Fatalf("rejoin %s under %s: not in sync after 1 min (%q)", n.Addr, master.Addr, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// replication is the node's INFO replication, "" when it does not answer.
func replication(ctx context.Context, c *redis.Client) string {
	info, _ := c.Info(ctx, "replication").Result()
	return info
}
