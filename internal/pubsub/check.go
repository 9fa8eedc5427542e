package pubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

var (
	errNoHealthReply = errors.New("no reply to the health check in time")
	// ErrNotMaster: the session's node is not the channel's master.
	ErrNotMaster = errors.New("the subscription's node is not the channel's master")
)

// roleCheck asks a session's node whether it is the master. Its client talks
// to that node on a connection of its own, not the node's pool: go-redis
// reads a reply within the client's read timeout whatever the context says
// (unless the client was built with ContextTimeoutEnabled), so a ROLE sent
// to a frozen node through the user's client would hold the session, and
// Close, for that timeout and its retries. This one has the health timeout
// as its timeouts, honours the context and does not retry.
type roleCheck struct {
	n       *node
	client  *redis.Client
	addr    string
	timeout time.Duration
	// refused: the server will not answer ROLE (renamed away, or denied by
	// the user's ACL: ROLE is in @admin and @dangerous). The session goes on
	// without it.
	refused bool
}

func (r *roleCheck) close() {
	if r.client != nil {
		r.client.Close()
	}
}

// check fails with ErrNotMaster when the node is not the master (and, under
// Sentinel, when the Sentinels name another node). c's hooks are called.
func (r *roleCheck) check(ctx context.Context, c *conn) error {
	if r.n.roleAddr == nil {
		return nil
	}
	addr, opts := r.n.roleAddr()
	if addr == "" {
		return fmt.Errorf("%w (no node dialed yet)", ErrNotMaster)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if r.n.current != nil {
		cur, err := r.n.current(ctx)
		if err != nil {
			return err
		}
		if cur != addr {
			c.hook(func(h *Hooks) func() { return h.NotMaster })
			return fmt.Errorf("%w (subscribed on %s, the sentinels name %s)", ErrNotMaster, addr, cur)
		}
	}
	if r.refused {
		return nil
	}
	if r.client == nil || r.addr != addr {
		r.close()
		o := CopyOptions(opts)
		o.Addr = addr
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = r.timeout, r.timeout, r.timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.PoolSize, o.MinIdleConns, o.MaxIdleConns = 1, 0, 1
		r.client, r.addr = redis.NewClient(&o), addr
	}
	c.hook(func(h *Hooks) func() { return h.BeforeRole })
	reply, err := r.client.Do(ctx, "ROLE").Slice()
	if roleRefused(err) {
		r.refused = true
		c.report(kind.Errorf("cacheguard: the subscriber cannot check that its node is the channel's master (grant the Redis user +role): %w", err))
		return nil
	}
	if err != nil {
		return err
	}
	if len(reply) == 0 || reply[0] != "master" {
		c.hook(func(h *Hooks) func() { return h.NotMaster })
		return fmt.Errorf("%w (%s answers ROLE with %v)", ErrNotMaster, addr, reply)
	}
	return nil
}

// roleRefused tells a server that will never answer ROLE from one that
// failed to this time.
func roleRefused(err error) bool {
	return redis.HasErrorPrefix(err, "unknown command") || Refused(err)
}

// Refused reports an error by which the server refused a command or a
// channel to the connection's Redis user (its ACL, NOPERM): a session ended
// by it fails again until the user is granted what it lacks.
func Refused(err error) bool { return redis.HasErrorPrefix(err, "NOPERM") }

// CopyOptions copies the options of a client that may be in use. go-redis
// changes what its MaintNotificationsConfig points to as the client sets up
// a connection (under a lock of its own), and NewClient reads it: the copy
// gets a config of its own instead, without the notifications (a subscriber
// or a ROLE check reconnects the usual way).
func CopyOptions(opts *redis.Options) redis.Options {
	o := *opts
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return o
}

// CopyClusterOptions copies the options of a cluster client that may be in
// use. go-redis keeps Addrs as the client's list of known nodes and appends
// the nodes it discovers to it: a copy sharing the slice would append to the
// same array from another client, under another lock (a data race, and each
// client's list overwritten by the other's).
func CopyClusterOptions(opts *redis.ClusterOptions) redis.ClusterOptions {
	o := *opts
	o.Addrs = slices.Clone(opts.Addrs)
	return o
}
