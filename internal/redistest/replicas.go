package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicatedCluster is a Redis Cluster of three masters with one replica
// each, for failover tests. Its node timeout is short (one second), so that
// a killed master's replica is promoted within a couple of seconds.
type ReplicatedCluster struct {
	*Cluster
	// Replicas[i] replicates Masters[i] (until a failover swaps their roles).
	Replicas []*Server
}

// replicatedNodeTimeout is the cluster-node-timeout of a ReplicatedCluster.
const replicatedNodeTimeout = "1000"

// StartClusterWithReplicas starts three masters and three replicas, assigns
// the slots evenly to the masters, attaches a replica to each and waits until
// every node sees the cluster as ok and every replica is in sync. extra are
// config directives for every node, as for Start (e.g. "appendonly", "yes",
// "appendfsync", "always"). It skips the test without redis-server, like
// StartCluster.
func StartClusterWithReplicas(t testing.TB, extra ...string) (*ReplicatedCluster, redis.UniversalClient) {
	t.Helper()
	NeedServer(t)
	return startClusterWithReplicas(t, Start, extra)
}

// StartClusterWithReplicasTLS is StartClusterWithReplicas with TLS only
// (StartTLS), on the client side too.
func StartClusterWithReplicasTLS(t testing.TB, extra ...string) (*ReplicatedCluster, redis.UniversalClient) {
	t.Helper()
	NeedTLS(t)
	return startClusterWithReplicas(t, StartTLS, extra)
}

func startClusterWithReplicas(t testing.TB, start starter, extra []string) (*ReplicatedCluster, redis.UniversalClient) {
	t.Helper()
	conf := []string{
		"cluster-enabled", "yes",
		"cluster-config-file", "nodes.conf",
		"cluster-node-timeout", replicatedNodeTimeout,
		"cluster-require-full-coverage", "yes",
		// A replica's first sync waits 5 s by default for others to join it.
		"repl-diskless-sync-delay", "0",
		// A replica whose link to its master was quiet for long (a frozen
		// or loaded machine) may still be promoted: the failover tests
		// kill masters and wait for their replicas, whatever their data's age.
		"cluster-replica-validity-factor", "0",
	}
	conf = append(conf, extra...)
	rc := &ReplicatedCluster{Cluster: &Cluster{t: t}}
	for i := 0; i < 3; i++ {
		rc.Masters = append(rc.Masters, start(t, conf...))
	}
	for i := 0; i < 3; i++ {
		rc.Replicas = append(rc.Replicas, start(t, conf...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := rc.form(ctx); err != nil {
		t.Fatalf("redistest: forming cluster: %v", err)
	}
	if err := rc.attachReplicas(ctx); err != nil {
		t.Fatalf("redistest: attaching replicas: %v", err)
	}
	return rc, rc.Client()
}

func (rc *ReplicatedCluster) attachReplicas(ctx context.Context) error {
	host, port := splitAddr(rc.Masters[0].Addr)
	for _, r := range rc.Replicas {
		c := ClientLike(r.Options())
		err := c.Do(ctx, "CLUSTER", "MEET", host, port).Err()
		c.Close()
		if err != nil {
			return fmt.Errorf("replica %s: %w", r.Addr, err)
		}
	}
	for i, r := range rc.Replicas {
		id, err := nodeID(ctx, rc.Masters[i])
		if err != nil {
			return err
		}
		c := ClientLike(r.Options())
		// REPLICATE needs the master in the node table, which gossip fills.
		for err == nil {
			nodes, nerr := c.ClusterNodes(ctx).Result()
			if nerr == nil && strings.Contains(nodes, id) {
				break
			}
			err = sleepCtx(ctx, 20*time.Millisecond)
		}
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("replica %s of %s: %w", r.Addr, rc.Masters[i].Addr, err)
		}
	}
	for _, s := range append(append([]*Server{}, rc.Masters...), rc.Replicas...) {
		if err := waitClusterOK(ctx, s, 6); err != nil {
			return err
		}
	}
	for _, r := range rc.Replicas {
		if err := waitInfo(ctx, r, "master_link_status:up"); err != nil {
			return err
		}
	}
	return rc.waitReplicasListed(ctx)
}

// waitReplicasListed waits until every node's CLUSTER SLOTS lists a replica
// beside each master: a client that reads replicas loads its slot map from
// any node, and one loaded from a node whose view lags the replicas'
// attachment sends every read to the masters, until it reloads.
func (rc *ReplicatedCluster) waitReplicasListed(ctx context.Context) error {
	for _, n := range append(append([]*Server{}, rc.Masters...), rc.Replicas...) {
		c := ClientLike(n.Options())
		for {
			slots, err := c.ClusterSlots(ctx).Result()
			listed := err == nil && len(slots) > 0
			for _, s := range slots {
				listed = listed && len(s.Nodes) >= 2
			}
			if listed {
				break
			}
			if serr := sleepCtx(ctx, 20*time.Millisecond); serr != nil {
				c.Close()
				return fmt.Errorf("%s never listed the replicas in CLUSTER SLOTS (last: %v, %v)", n.Addr, slots, err)
			}
		}
		c.Close()
	}
	return nil
}

// Addrs returns every node's address, masters and replicas.
func (rc *ReplicatedCluster) Addrs() []string {
	a := rc.Cluster.Addrs()
	for _, r := range rc.Replicas {
		a = append(a, r.Addr)
	}
	return a
}

// Client returns a new cluster client seeded with every node, closed when
// the test ends.
func (rc *ReplicatedCluster) Client() *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), TLSConfig: rc.Masters[0].Options().TLSConfig})
	rc.t.Cleanup(func() { c.Close() })
	return c
}

// KillMaster kills Masters[i] (SIGKILL) and waits until its replica has been
// promoted and sees the cluster as ok again.
func (rc *ReplicatedCluster) KillMaster(i int) {
	rc.t.Helper()
	rc.Masters[i].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitInfo(ctx, rc.Replicas[i], "role:master"); err != nil {
		rc.t.Fatalf("redistest: replica of killed master %d not promoted: %v", i, err)
	}
	if err := waitClusterState(ctx, rc.Replicas[i]); err != nil {
		rc.t.Fatalf("redistest: after failover: %v", err)
	}
}

// KillMasterInSync is KillMaster for a crash that loses no acknowledged
// write: it pauses writes on Masters[i] (CLIENT PAUSE WRITE: commands
// arriving now wait, unanswered, and die with the process), waits until the
// replica has processed the master's whole replication stream, and then
// kills it. KillMaster alone can lose the writes of the last instant, as a
// real crash can: replication is asynchronous.
func (rc *ReplicatedCluster) KillMasterInSync(i int) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := ClientLike(rc.Masters[i].Options())
	defer m.Close()
	if err := m.Do(ctx, "CLIENT", "PAUSE", 30000, "WRITE").Err(); err != nil {
		rc.t.Fatalf("redistest: CLIENT PAUSE on master %d: %v", i, err)
	}
	want, err := replOffset(ctx, m, "master_repl_offset")
	if err != nil {
		rc.t.Fatalf("redistest: master %d: %v", i, err)
	}
	r := ClientLike(rc.Replicas[i].Options())
	defer r.Close()
	for {
		got, err := replOffset(ctx, r, "slave_repl_offset")
		if err == nil && got >= want {
			break
		}
		if serr := sleepCtx(ctx, 10*time.Millisecond); serr != nil {
			rc.t.Fatalf("redistest: replica %d never reached offset %d (last %d, %v)", i, want, got, err)
		}
	}
	rc.KillMaster(i)
}

// replOffset reads one offset field of INFO replication.
func replOffset(ctx context.Context, c *redis.Client, field string) (int64, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO replication", field)
}

// RejoinAsReplica restarts Masters[i] after KillMaster(i), with the data
// its persistence kept (none without AOF or RDB), waits until it has
// rejoined as the replica of the promoted node and is in sync, and swaps
// the two in Masters and Replicas, so that Masters[i] is again shard i's
// master and KillMaster(i) can fail it over again.
func (rc *ReplicatedCluster) RejoinAsReplica(i int) {
	rc.t.Helper()
	rc.Masters[i].Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, want := range []string{"role:slave", "master_link_status:up"} {
		if err := waitInfo(ctx, rc.Masters[i], want); err != nil {
			rc.t.Fatalf("redistest: restarted master %d not a replica in sync: %v", i, err)
		}
	}
	rc.Masters[i], rc.Replicas[i] = rc.Replicas[i], rc.Masters[i]
}

// Failover promotes Replicas[i] with CLUSTER FAILOVER (the master agrees and
// hands over without losing writes) and waits until it is master.
func (rc *ReplicatedCluster) Failover(i int) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := ClientLike(rc.Replicas[i].Options())
	defer c.Close()
	// A manual failover that does not complete within Redis's own limit
	// (5 s: the replica could not catch up with its paused master, as on a
	// busy machine) is abandoned without a word; ask again until the
	// deadline.
	for {
		if err := c.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			rc.t.Fatalf("redistest: CLUSTER FAILOVER: %v", err)
		}
		attempt, cancel := context.WithTimeout(ctx, manualFailoverLimit)
		err := waitInfo(attempt, rc.Replicas[i], "role:master")
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			rc.t.Fatalf("redistest: replica %d not promoted: %v", i, err)
		}
	}
}

// WaitDemotedListed waits, after Failover(i), until the promoted node
// lists the demoted one among its replicas: until then, shard messages it
// publishes do not reach the demoted node's subscribers.
func (rc *ReplicatedCluster) WaitDemotedListed(i int) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	promoted, demoted := rc.Replicas[i].Addr, rc.Masters[i].Addr
	pid, err := nodeID(ctx, rc.Replicas[i])
	if err != nil {
		rc.t.Fatalf("redistest: %v", err)
	}
	did, err := nodeID(ctx, rc.Masters[i])
	if err != nil {
		rc.t.Fatalf("redistest: %v", err)
	}
	c := ClientLike(rc.Replicas[i].Options())
	defer c.Close()
	for {
		nodes, err := c.Do(ctx, "CLUSTER", "REPLICAS", pid).StringSlice()
		for _, n := range nodes {
			if strings.HasPrefix(n, did+" ") {
				return
			}
		}
		if serr := sleepCtx(ctx, 10*time.Millisecond); serr != nil {
			rc.t.Fatalf("redistest: %s never listed %s as its replica (last: %v, %v)", promoted, demoted, nodes, err)
		}
	}
}

// manualFailoverLimit is a little more than the time Redis gives a manual
// failover (CLUSTER_MF_TIMEOUT, 5 s) before abandoning it.
const manualFailoverLimit = 6 * time.Second

func nodeID(ctx context.Context, s *Server) (string, error) {
	c := ClientLike(s.Options())
	defer c.Close()
	return c.Do(ctx, "CLUSTER", "MYID").Text()
}

// waitInfo polls INFO on s until it contains want.
func waitInfo(ctx context.Context, s *Server, want string) error {
	addr := s.Addr
	c := ClientLike(s.Options())
	defer c.Close()
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, want) {
			return nil
		}
		if serr := sleepCtx(ctx, 50*time.Millisecond); serr != nil {
			return fmt.Errorf("%s never reported %q (last: %v)", addr, want, err)
		}
	}
}

// waitClusterState polls until s reports cluster_state:ok, whatever the
// number of nodes it knows (a killed one stays in the table).
func waitClusterState(ctx context.Context, s *Server) error {
	addr := s.Addr
	c := ClientLike(s.Options())
	defer c.Close()
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		if serr := sleepCtx(ctx, 50*time.Millisecond); serr != nil {
			return fmt.Errorf("%s never reached cluster_state:ok (last: %v)", addr, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
