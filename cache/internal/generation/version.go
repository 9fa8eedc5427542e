package generation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/redis/go-redis/v9"
)

// minRedisMajor is the first Redis major version with SET ... NX GET.
const minRedisMajor = 7

// probeVersion asks every server behind rdb (each master of a cluster, each
// shard of a ring) for INFO server and refuses one that reports a version
// below 7.0 (an error wrapping errs.ErrUnsupportedServer). A server whose
// version cannot be read (a stand-in without INFO, an unfamiliar format) is
// not refused. answered is false while some server did not answer at all
// (unreachable, frozen): the probe is asked again at the next sync.
func probeVersion(ctx context.Context, rdb redis.UniversalClient) (answered bool, err error) {
	var mu sync.Mutex
	answered = true
	probe := func(ctx context.Context, c redis.UniversalClient, addr string) {
		info, ierr := c.Info(ctx, "server").Result()
		mu.Lock()
		defer mu.Unlock()
		var reply redis.Error
		if ierr != nil && !errors.As(ierr, &reply) {
			answered = false
			return
		}
		v, ok := redisVersion(info)
		if !ok {
			return
		}
		if major, ok := majorOf(v); ok && major < minRedisMajor {
			err = fmt.Errorf("%w: %s runs redis %s; SET NX GET needs redis %d.0 or later", errs.ErrUnsupportedServer, addr, v, minRedisMajor)
		}
	}
	var each error
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		each = r.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			probe(ctx, n, n.Options().Addr)
			return nil
		})
	case *redis.Ring:
		each = r.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			probe(ctx, n, n.Options().Addr)
			return nil
		})
	default:
		probe(ctx, rdb, "the server")
	}
	if each != nil { // the cluster's masters are not known yet
		answered = false
	}
	return answered, err
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
