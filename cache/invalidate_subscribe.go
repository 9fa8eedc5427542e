package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The subscriber. It runs one session at a time: a new PubSub (a new
// connection, so on a cluster it goes to the channel's current owner),
// subscribed, checked by PING, until anything goes wrong; then the tier goes
// down, and after a backoff a new session starts. A session never reuses the
// previous one's connection: after a slot move the old node would answer
// MOVED to every SSUBSCRIBE, and a half-open connection never answers at all.
//
// On a cluster the session must be on the channel's master, and keep
// checking that it is: writers publish on the master, and a PING answered
// by any other node proves nothing about what the master published. A
// replica accepts SSUBSCRIBE and answers PINGs, but gets the master's
// messages later over the cluster bus, and none at all from a promoted
// master that does not list it yet (for hundreds of milliseconds of a manual
// failover). go-redis sends the SSUBSCRIBE of a ReadOnly client to a
// replica, and that of a client whose slot map predates a failover to the
// demoted master. So the session subscribes through the node its client
// takes for the master, and asks that node its ROLE when the subscription is
// confirmed and after every health PING: the tier comes up, and its trust is
// extended, only while the answer is "master" (subscribe_role.go).

const (
	subscribeRetryMin = 50 * time.Millisecond
	subscribeRetryMax = 2 * time.Second
	// maxTrackedSources bounds the per-publisher sequence table; past it the
	// table starts over (forgetting a source only skips one gap check).
	maxTrackedSources = 4096
)

var (
	errNoHealthReply = errors.New("no reply to the health check in time")
	errNotMaster     = errors.New("the subscription's node is not the channel's master")
)

// subscribe runs until Close, keeping the invalidation subscription and the
// epoch in step.
func (c *Cache[V]) subscribe() {
	ctx := c.closing
	retry := subscribeRetryMin
	for {
		up, err := c.subscribeSession(ctx)
		if ctx.Err() != nil {
			return
		}
		c.subscriptionDown(err)
		if up {
			retry = subscribeRetryMin
		}
		if cc, ok := c.rdb.(*redis.ClusterClient); ok {
			cc.ReloadState(ctx) // the channel's slot may have moved
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(2*retry, subscribeRetryMax)
	}
}

// subscribeSession subscribes on a new connection and applies what arrives
// until the connection fails, misses a health reply, or the server ends the
// subscription. up tells whether the subscription was confirmed.
func (c *Cache[V]) subscribeSession(ctx context.Context) (up bool, err error) {
	interval, timeout := c.cfg.local.healthInterval, c.cfg.local.healthTimeout
	start := time.Now()
	ps, role, err := c.openSubscription(ctx, timeout)
	if err != nil {
		return false, err
	}
	defer ps.Close()
	defer role.close()
	// A blocked receive does not watch ctx (go-redis reads with its own
	// timeouts); closing the PubSub (and the ROLE client) on Close
	// unblocks it.
	stop := context.AfterFunc(ctx, func() {
		ps.Close()
		role.close()
	})
	defer stop()

	seqs := map[[sourceIDSize]byte]uint64{}
	var (
		pingSent time.Time // zero when no PING is outstanding
		token    string
		n        uint64
		nextPing time.Time
	)
	for {
		now := time.Now()
		var deadline time.Time
		switch {
		case !up:
			deadline = start.Add(timeout)
		case !pingSent.IsZero():
			deadline = pingSent.Add(timeout)
		}
		if !deadline.IsZero() && !now.Before(deadline) {
			return up, errNoHealthReply
		}
		if up && pingSent.IsZero() && !now.Before(nextPing) {
			n++
			token = "cacheguard-health-" + strconv.FormatUint(n, 10)
			if err := ps.Ping(ctx, token); err != nil {
				return up, err
			}
			// Asked after the PING was sent: its reply vouches for what
			// was published before then only if this node was the
			// master then.
			if err := c.checkRole(ctx, role); err != nil {
				return up, err
			}
			pingSent = now
			deadline = now.Add(timeout)
		}
		if deadline.IsZero() {
			deadline = nextPing
		}
		msg, err := ps.ReceiveTimeout(ctx, max(time.Until(deadline), time.Millisecond))
		if ctx.Err() != nil {
			return up, ctx.Err()
		}
		if err != nil {
			var nerr interface{ Timeout() bool }
			if errors.As(err, &nerr) && nerr.Timeout() {
				continue // the deadlines above decide
			}
			return up, err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				if !up {
					if err := c.checkRole(ctx, role); err != nil {
						return false, err
					}
					up = true
					// Everything published after the SUBSCRIBE was sent
					// arrives from here on; what came before is flushed.
					c.subscriptionUp(start.Add(interval + timeout))
					nextPing = start.Add(interval)
				}
			case "unsubscribe", "sunsubscribe":
				// The server dropped us: on a cluster, the channel's slot
				// moved. The next session dials its new owner.
				return up, fmt.Errorf("server ended the subscription (%s)", m.Kind)
			}
		case *redis.Pong:
			if !pingSent.IsZero() && m.Payload == token {
				// A reply to a PING sent at pingSent: every message
				// published before then has been applied.
				c.trustUntil.Store(pingSent.Add(interval + timeout).UnixNano())
				nextPing = pingSent.Add(interval)
				pingSent = time.Time{}
			}
		case *redis.Message:
			c.onInvalidation(m.Payload, seqs)
		}
	}
}

func (c *Cache[V]) subscriptionDown(err error) {
	c.trustUntil.Store(0)
	if e := c.epoch.Load(); e%2 == 0 {
		c.epoch.CompareAndSwap(e, e+1)
	}
	c.inval.downs.Add(1)
	c.report(logSubscription, "", fmt.Errorf("cacheguard: invalidation subscription down, local tier off until it is back: %w", err))
}

// subscriptionUp flushes the local tier and lets it serve again, trusting it
// until trustUntil unless a health reply extends that.
func (c *Cache[V]) subscriptionUp(trustUntil time.Time) {
	e := c.epoch.Load()
	if e%2 == 0 {
		// Already up: a resubscription we did not see fail. Go through
		// down first so nothing admitted before is trusted.
		e = c.epoch.Add(1)
	}
	c.localFloor.Store(e + 1) // the epoch it comes up in
	c.local.Clear()
	c.stats.localFlushes.Add(1)
	c.trustUntil.Store(trustUntil.UnixNano())
	c.epoch.Add(1)
	c.subscribedOnce.Do(func() { close(c.subscribed) })
	if c.hooks != nil && c.hooks.onSubscribed != nil {
		c.hooks.onSubscribed()
	}
}

// flushLocal clears the local tier when an invalidation may have been lost
// while the subscription stayed up. It moves the epoch on by two (it stays
// up) and the floor with it before clearing: reads in flight then do not
// admit what they fetched before the flush, and an entry one of them stored
// anyway, around the Clear, is of an epoch below the floor and never served,
// not even stale while Redis fails.
func (c *Cache[V]) flushLocal() {
	c.invalSeq.Add(1)
	if e := c.epoch.Load(); e%2 == 0 {
		c.epoch.CompareAndSwap(e, e+2) // a failed swap: it went down, which is as good
	}
	c.localFloor.Store(c.epoch.Load())
	c.local.Clear()
	c.stats.localFlushes.Add(1)
}

// onInvalidation applies one message; seqs holds the last sequence number
// seen from each publisher in this session.
func (c *Cache[V]) onInvalidation(payload string, seqs map[[sourceIDSize]byte]uint64) {
	m, err := decodeInvalidation([]byte(payload))
	if err != nil {
		c.inval.decodeErrors.Add(1)
		c.flushLocal()
		c.report(logInvalidationBad, "", fmt.Errorf("cacheguard: invalidation on %s (local tier cleared): %w", c.channel, err))
		return
	}
	if m.src == c.source {
		return // applied locally when written
	}
	c.inval.received.Add(1)
	if lag := time.Duration(time.Now().UnixNano() - m.sent); m.sent > 0 && lag >= 0 {
		c.inval.observeLag(lag)
	}
	last, known := seqs[m.src]
	if known && m.seq > last+1 {
		// Messages from this publisher were lost in between; their keys are
		// unknown, so nothing in the tier can be vouched for.
		c.inval.gaps.Add(1)
		c.inval.lost.Add(m.seq - last - 1)
		c.flushLocal()
	}
	if !known || m.seq > last {
		if !known && len(seqs) >= maxTrackedSources {
			clear(seqs)
		}
		seqs[m.src] = m.seq
	}
	c.dropLocal(m.keys)
	c.forget(m.keys)
	if c.hooks != nil && c.hooks.onInvalidate != nil {
		c.hooks.onInvalidate(m.keys)
	}
}
