package cache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// minRedisMajor is the first Redis major version with SET ... NX GET.
const minRedisMajor = 7

// checkServerVersion asks every server behind rdb (each master of a cluster,
// each shard of a ring) for INFO server, once, and refuses one that reports a
// version below 7.0. A server whose version cannot be read (unreachable, a
// stand-in without INFO, an unfamiliar format) is not refused.
//
// The probe waits at most timeout, on a client that honours context
// deadlines (newSyncClient); a server that does not answer in time is not
// refused (New does not need Redis to be up).
func checkServerVersion(rdb redis.UniversalClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		mu  sync.Mutex
		old error
	)
	probe := func(ctx context.Context, c redis.UniversalClient, addr string) {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return
		}
		v, ok := redisVersion(info)
		if !ok {
			return
		}
		if major, ok := majorOf(v); ok && major < minRedisMajor {
			mu.Lock()
			old = fmt.Errorf("%w: %s runs redis %s; SET NX GET needs redis %d.0 or later", ErrUnsupportedServer, addr, v, minRedisMajor)
			mu.Unlock()
		}
	}
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		_ = r.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			probe(ctx, n, n.Options().Addr)
			return nil
		})
	case *redis.Ring:
		_ = r.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			probe(ctx, n, n.Options().Addr)
			return nil
		})
	default:
		probe(ctx, rdb, "the server")
	}
	return old
}

// redisVersion finds redis_version in an INFO reply.
func redisVersion(info string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, v != ""
		}
	}
	return "", false
}

func majorOf(version string) (int, bool) {
	head, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(head)
	return n, err == nil
}
