package redistest

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/redis/go-redis/v9"
)

// ClientLike returns a client of its own (its own connections) with the
// settings of o, which may belong to a live client, as another process
// would have. go-redis writes to a live client's options while it connects,
// so o is copied the one way that does not race with that write
// (pubsub.CopyOptions); the caller closes the client.
func ClientLike(o *redis.Options) *redis.Client {
	c := pubsub.CopyOptions(o)
	return redis.NewClient(&c)
}

// FastFail returns a client of addr that gives up on a dead server at once
// (no retries, one dial of at most 200 ms), closed when t ends: for tests
// that kill the server and look at what the callers get.
func FastFail(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}
