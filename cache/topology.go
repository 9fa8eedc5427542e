package cache

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// reloadTopology asks a cluster client to reload its slot map after a
// failure that may mean the topology changed. go-redis reloads it by itself
// only on MOVED/ASK replies and every ClusterStateReloadInterval (60 s by
// default): after a master dies, a client whose traffic goes to that master's
// slots would otherwise keep dialling the dead node until the interval runs
// out, long after its replica took over. The reload is lazy and coalesced by
// go-redis (one at a time, 200 ms apart), so calling it on every failure
// costs at most a few CLUSTER SLOTS a second.
func (c *Cache[V]) reloadTopology(err error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) && !redis.HasErrorPrefix(err, "CLUSTERDOWN") {
		return // the server answered: the node is alive and owns the slot
	}
	cc.ReloadState(context.Background())
}
