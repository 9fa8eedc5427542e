package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// On a cluster an invalidation session must be on the channel's master, and
// keep checking that it is (see invalidate_subscribe.go): it asks its node
// ROLE when the subscription is confirmed and after every health PING.
//
// Redis 7.0 ends the shard subscriptions of a master it demotes, which ends
// the session by itself; the check after each PING is there for servers that
// keep them, at one round trip per health interval (during which a message
// that arrives waits to be applied).

// roleCheck is a session's way to ask its node's role. Its zero value (off
// a cluster) checks nothing.
type roleCheck struct {
	// client talks to the session's node on a connection of its own. Not
	// the node's pool: go-redis reads a reply within the client's read
	// timeout whatever the context says (unless the client was built with
	// ContextTimeoutEnabled), so a ROLE sent to a frozen node through the
	// user's client would hold the session, and Close, for that timeout and
	// its retries. This one has the health timeout as its timeouts, honours
	// the context, does not retry, and is closed with the session or by
	// Close: one more connection per Cache on a cluster.
	client *redis.Client
	// timeout bounds each ROLE: the health check's.
	timeout time.Duration
	// refused: the server will not answer ROLE (renamed away, or denied by
	// the user's ACL; ROLE is in the @admin and @dangerous categories). The
	// session goes on unchecked. Only the session's goroutine touches it.
	refused bool
}

// openSubscription opens a session's PubSub. On a cluster it subscribes
// through the node the client takes for the channel's master and returns
// that node's role check.
func (c *Cache[V]) openSubscription(ctx context.Context, timeout time.Duration) (*redis.PubSub, *roleCheck, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return c.rdb.Subscribe(ctx, c.channel), &roleCheck{}, nil
	}
	master, err := cc.MasterForKey(ctx, c.channel)
	if err != nil {
		return nil, nil, err
	}
	o := *master.Options()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 1
	return master.SSubscribe(ctx, c.channel), &roleCheck{client: redis.NewClient(&o), timeout: timeout}, nil
}

// close closes the role check's client; it may be called more than once.
func (r *roleCheck) close() {
	if r.client != nil {
		r.client.Close()
	}
}

// checkRole asks the session's node whether it is a master and fails with
// errNotMaster if it is not. A refused ROLE is reported once and turns the
// check off for the session.
func (c *Cache[V]) checkRole(ctx context.Context, r *roleCheck) error {
	if r.client == nil || r.refused {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if c.hooks != nil && c.hooks.beforeRole != nil {
		c.hooks.beforeRole()
	}
	reply, err := r.client.Do(ctx, "ROLE").Slice()
	if roleRefused(err) {
		r.refused = true
		c.report(logSubscription, "", fmt.Errorf("cacheguard: the invalidation subscriber cannot check that its node is the channel's master (grant the Redis user +role): %w", err))
		return nil
	}
	if err != nil {
		return err
	}
	if len(reply) == 0 || reply[0] != "master" {
		if c.hooks != nil && c.hooks.onNotMaster != nil {
			c.hooks.onNotMaster()
		}
		return fmt.Errorf("%w (%s answers ROLE with %v)", errNotMaster, r.client.Options().Addr, reply)
	}
	return nil
}

// roleRefused tells a server that will never answer ROLE from one that
// failed to this time.
func roleRefused(err error) bool {
	return redis.HasErrorPrefix(err, "unknown command") || redis.HasErrorPrefix(err, "NOPERM")
}
