package redistest

import (
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
