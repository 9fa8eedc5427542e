package redistest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A spec names the servers behind a client in a string, so that a child
// process (Subprocesses) can connect to the parent's: "single:addr",
// "cluster:addr,addr,…" or "sentinel:name@addr,addr,…".

// failoverSpecs remembers the spec of every failover client Sentinel made (a
// failover client does not tell its Sentinels' addresses).
var failoverSpecs sync.Map // *redis.Client -> string

// Spec returns the spec of rdb, a client made by this package.
func Spec(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return "cluster:" + strings.Join(c.Options().Addrs, ",")
	case *redis.Client:
		if s, ok := failoverSpecs.Load(c); ok {
			return s.(string)
		}
		return "single:" + c.Options().Addr
	}
	panic(fmt.Sprintf("redistest: no spec for a %T", rdb))
}

// FromSpec returns a new client for the servers spec names, closed when the
// test ends. tune, if not nil, adjusts its options first.
func FromSpec(t testing.TB, spec string, tune func(*redis.UniversalOptions)) redis.UniversalClient {
	kind, addrs, _ := strings.Cut(spec, ":")
	var o redis.UniversalOptions
	switch kind {
	case "cluster":
		o.Addrs, o.IsClusterMode = strings.Split(addrs, ","), true
	case "sentinel":
		name, list, _ := strings.Cut(addrs, "@")
		o.MasterName, o.Addrs = name, strings.Split(list, ",")
	case "single":
		o.Addrs = []string{addrs}
	default:
		t.Fatalf("redistest: bad spec %q", spec)
	}
	if tune != nil {
		tune(&o)
	}
	rdb := redis.NewUniversalClient(&o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
