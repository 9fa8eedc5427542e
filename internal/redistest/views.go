package redistest

import (
	"context"
	"strings"
	"time"
)

// WaitViewsAgree waits, after Failover(i), until every node of the cluster
// lists Replicas[i] as a master and Masters[i] as a replica. A node's view
// lags the failover by a gossip round or more, and a client that reloads
// its slot map from a lagging node routes shard i to the demoted node
// again until that node catches up.
func (rc *ReplicatedCluster) WaitViewsAgree(i int) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	promoted, demoted := rc.Replicas[i].Addr, rc.Masters[i].Addr
	for _, n := range append(append([]*Server{}, rc.Masters...), rc.Replicas...) {
		addr := n.Addr
		c := ClientLike(n.Options())
		for {
			nodes, err := c.ClusterNodes(ctx).Result()
			if err == nil && nodeFlagged(nodes, promoted, "master") && nodeFlagged(nodes, demoted, "slave") {
				break
			}
			if serr := sleepCtx(ctx, 50*time.Millisecond); serr != nil {
				c.Close()
				rc.t.Fatalf("redistest: %s never saw %s as master and %s as replica (last: %v)", addr, promoted, demoted, err)
			}
		}
		c.Close()
	}
}

// nodeFlagged tells whether the CLUSTER NODES text lists the node at addr
// with flag among its flags.
func nodeFlagged(nodes, addr, flag string) bool {
	for line := range strings.SplitSeq(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[1], addr+"@") {
			continue
		}
		for fl := range strings.SplitSeq(f[2], ",") {
			if fl == flag {
				return true
			}
		}
		return false
	}
	return false
}
