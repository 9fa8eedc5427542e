package pubsub

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// Arming: the client a tracking connection dials with, and what its
// OnConnect sends on every new connection.

// trackingClient returns the client that dials c's sessions while it has
// tracking duty: the node's options, RESP2, and an OnConnect that arms the
// new connection. opMu must be held.
func (c *conn) trackingClient() (*redis.Client, error) {
	if c.track.client != nil {
		return c.track.client, nil
	}
	base, ok := c.node.client.(*redis.Client)
	if !ok {
		return nil, ErrTrackingUnsupported
	}
	o := CopyOptions(base.Options())
	o.Protocol = 2
	user := o.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		prefixes := c.h.trackPrefixes()
		err := arm(ctx, cn, prefixes)
		c.armMu.Lock()
		c.track.arm = armResult{prefixes: prefixes, err: err}
		c.armMu.Unlock()
		// An arming error leaves the connection's other channels working:
		// the Trackers hear of it when the session is confirmed.
		return nil
	}
	c.track.client = redis.NewClient(&o)
	return c.track.client, nil
}

// arm turns on broadcast tracking of prefixes on cn, redirected to cn itself.
func arm(ctx context.Context, cn *redis.Conn, prefixes []string) error {
	id, err := cn.ClientID(ctx).Result()
	if err != nil {
		return kind.Errorf("cacheguard: pubsub: CLIENT ID: %w", err)
	}
	args := []any{"CLIENT", "TRACKING", "on", "REDIRECT", id, "BCAST"}
	for _, p := range prefixes {
		if p == "" { // every key; trackPrefixes leaves it alone
			break
		}
		args = append(args, "PREFIX", p)
	}
	if err := cn.Do(ctx, args...).Err(); err != nil {
		return kind.Errorf("cacheguard: pubsub: CLIENT TRACKING: %w", err)
	}
	return nil
}

// errNotArmed: the session's connection was not dialled through the tracking
// client.
var errNotArmed = errors.New("the connection was not armed when dialled")

func (c *conn) disarm() {
	c.armMu.Lock()
	defer c.armMu.Unlock()
	c.track.arm = armResult{err: errNotArmed}
}

func (c *conn) armed() armResult {
	c.armMu.Lock()
	defer c.armMu.Unlock()
	return c.track.arm
}

// tracking reports whether c has tracking duty.
func (c *conn) tracking() bool {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.track.duty
}

// closeTrackingClient closes the client of c's tracking sessions, once c's
// goroutine is done with it.
func (c *conn) closeTrackingClient() {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.track.client != nil {
		_ = c.track.client.Close()
		c.track.client = nil
	}
}
