package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
	// opTimeout bounds a subscription change, made outside any caller's
	// context, and the search for a moved channel's new master.
	opTimeout = 5 * time.Second
	// movedPoll is how often a moved channel's new master is looked for
	// while the cluster client's slot map still names the old one.
	movedPoll = 20 * time.Millisecond
)

var errStopped = errors.New("cacheguard: pubsub: connection closed")

// conn is one node's connection. Its goroutine runs one session after
// another until it is shut.
type conn struct {
	h     *Hub
	key   string
	node  *node
	chans map[string]*channel // guarded by h.mu

	opMu    sync.Mutex // orders subscription changes; never held across a read
	ps      *redis.PubSub
	sent    map[string]time.Time // channels subscribed on ps, and when
	asked   map[string]int       // UNSUBSCRIBEs sent on ps whose reply is due
	stopped bool                 // under opMu: shut closed ps, or will
	stop    chan struct{}        // closed by shut
	once    sync.Once

	track connTrack  // tracking (track.go)
	armMu sync.Mutex // guards track.arm
}

// The Hub's record (c.chans, under h.mu) says which channels c should carry;
// sent says which it subscribed on its session. A change is made under opMu
// against the record as it is then, not as it was when the change was
// asked for, so that a channel closed by its last handler while a new
// handler subscribes it stays subscribed (and one subscribed while its last
// handler leaves is not), and an UNSUBSCRIBE reply c asked for is not taken
// for the server ending the subscription (a slot move).

// wanted reports whether c should carry name. opMu must be held.
func (c *conn) wanted(name string) bool {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	_, ok := c.chans[name]
	return ok
}

func newConn(h *Hub, key string, n *node) *conn {
	return &conn{h: h, key: key, node: n, chans: map[string]*channel{}, stop: make(chan struct{})}
}

// subscribe subscribes name on the current session; between sessions the
// next one does.
func (c *conn) subscribe(name string) { c.change(name, c.subscribeLocked) }

// unsubscribe unsubscribes name, unless it is wanted again by then.
func (c *conn) unsubscribe(name string) { c.change(name, c.unsubscribeLocked) }

// change runs do(name) under opMu: at once if opMu is free, else on a
// goroutine of the Hub's once the dial or change holding it is done, so that
// a caller (a lock waiter on its own context, Close) never waits for a dial
// to a frozen server. do looks at the Hub's record when it runs, so changes
// that overtake one another still leave the session as the record says.
func (c *conn) change(name string, do func(string)) {
	if c.opMu.TryLock() {
		defer c.opMu.Unlock()
		do(name)
		return
	}
	c.h.goLocked(func() {
		c.opMu.Lock()
		defer c.opMu.Unlock()
		do(name)
	})
}

func (c *conn) subscribeLocked(name string) {
	if c.stopped || c.isStopped() || c.ps == nil || !c.wanted(name) {
		return
	}
	// Sent again even when sent already: the server confirms it once more,
	// and that confirmation brings a handler that joined since its Up.
	c.send(name)
}

// send subscribes name on ps, one command per channel. A failure closes ps,
// which ends the session. opMu must be held.
func (c *conn) send(name string) {
	ctx, cancel := context.WithTimeout(c.h.bg, opTimeout)
	defer cancel()
	c.sent[name] = time.Now()
	var err error
	if c.h.route.sharded && name != TrackChannel {
		err = c.ps.SSubscribe(ctx, name)
	} else {
		err = c.ps.Subscribe(ctx, name)
	}
	if err != nil {
		_ = c.ps.Close()
	}
}

func (c *conn) unsubscribeLocked(name string) {
	if _, ok := c.sent[name]; c.stopped || c.isStopped() || c.ps == nil || !ok || c.wanted(name) {
		return
	}
	delete(c.sent, name)
	c.asked[name]++
	ctx, cancel := context.WithTimeout(c.h.bg, opTimeout)
	defer cancel()
	var err error
	if c.h.route.sharded {
		err = c.ps.SUnsubscribe(ctx, name)
	} else {
		err = c.ps.Unsubscribe(ctx, name)
	}
	if err != nil {
		_ = c.ps.Close() // the next session subscribes what is left
	}
}

// unasked reports whether the server ended name's subscription on its own,
// forgetting it.
func (c *conn) unasked(name string) bool {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if n := c.asked[name]; n > 0 { // the reply to an UNSUBSCRIBE of ours
		if n == 1 {
			delete(c.asked, name)
		} else {
			c.asked[name] = n - 1
		}
		return false
	}
	_, ok := c.sent[name]
	delete(c.sent, name)
	return ok && !c.isStopped()
}

func (c *conn) sentAt(name string) time.Time {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.sent[name]
}

// shut stops the goroutine and closes the connection.
// It does not wait for a dial or a subscription change under way (against a
// frozen server, on a client that ignores contexts, that lasts the client's
// read timeout): their holder finds c stopped, and the session ends at its
// next look at c.stop.
func (c *conn) shut() {
	c.once.Do(func() { close(c.stop) })
	if !c.opMu.TryLock() {
		return
	}
	defer c.opMu.Unlock()
	c.stopped = true
	if c.ps != nil {
		_ = c.ps.Close()
	}
}

func (c *conn) isStopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// open starts a session's PubSub, subscribed to every channel of c.
func (c *conn) open() *redis.PubSub {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.stopped || c.isStopped() {
		return nil
	}
	c.h.mu.Lock()
	names := make([]string, 0, len(c.chans)+1)
	if c.track.duty {
		names = append(names, TrackChannel) // dials, and arms, first
	}
	for n := range c.chans {
		names = append(names, n)
	}
	c.h.mu.Unlock()
	client := c.node.client
	if len(names) > 0 && names[0] == TrackChannel {
		c.disarm() // until this session's dial arms
		tc, err := c.trackingClient()
		if err != nil {
			c.report(err)
		} else {
			client = tc
		}
	}
	switch {
	case c.h.route.sharded:
		c.ps = client.SSubscribe(c.h.bg)
	case c.h.route.perChan:
		// A Ring picks the shard by the first channel and refuses (with
		// a panic) a PubSub with none: a Ring connection carries the one
		// channel its key names.
		c.ps = client.Subscribe(c.h.bg, c.key)
	default:
		c.ps = client.Subscribe(c.h.bg)
	}
	c.sent, c.asked = map[string]time.Time{}, map[string]int{}
	for _, n := range names {
		c.send(n)
	}
	return c.ps
}

func (c *conn) closePS(ps *redis.PubSub) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.ps == ps {
		c.ps, c.sent, c.asked = nil, nil, nil
	}
	_ = ps.Close()
}

// run runs sessions until c is shut; between two, every handler hears Down
// and channels whose node changed move to their new node's connection.
func (c *conn) run() {
	defer c.closeTrackingClient()
	retry := retryMin
	for {
		up, err := c.session()
		if c.isStopped() {
			return
		}
		c.h.down(c, err)
		if c.tracking() {
			c.h.kickTrack() // a failover may have made another node master
		}
		if up {
			retry = retryMin
		}
		if !c.h.rehomeAll(c) {
			return
		}
		t := time.NewTimer(retry)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
		retry = min(2*retry, retryMax)
	}
}

// session subscribes c's channels on a new connection and delivers what
// arrives until the connection fails, misses a health reply, or its node is
// found not to be the channels' master. up tells whether a subscription was
// confirmed.
func (c *conn) session() (up bool, err error) {
	ctx := c.h.bg
	interval, timeout := c.health()
	start := time.Now()
	ps := c.open()
	if ps == nil {
		return false, errStopped
	}
	defer c.closePS(ps)
	if c.isStopped() { // shut while the session dialled
		return false, errStopped
	}
	role := &roleCheck{n: c.node, timeout: timeout}
	defer role.close()
	checked := false
	var (
		pingSent time.Time // zero when no PING is outstanding
		token    string
		n        uint64
		nextPing time.Time
	)
	for {
		interval, timeout = c.health()
		role.timeout = timeout
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
			if err := role.check(ctx, c); err != nil {
				return up, err
			}
			pingSent = now
			deadline = now.Add(timeout)
		}
		if deadline.IsZero() {
			deadline = nextPing
		}
		msg, err := ps.ReceiveTimeout(ctx, max(time.Until(deadline), time.Millisecond))
		if c.isStopped() || ctx.Err() != nil {
			return up, errStopped
		}
		if flushPayload(err) { // a flush on a tracking connection
			c.h.trackDeliver(c, nil)
			continue
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
				if !checked {
					if err := role.check(ctx, c); err != nil {
						return up, err
					}
					checked = true
				}
				if !up {
					up = true
					nextPing = start.Add(interval)
				}
				if m.Channel == TrackChannel {
					if err := c.h.trackConfirm(c, ps, c.sentAt(m.Channel)); err != nil {
						return up, err
					}
					continue
				}
				c.h.confirm(c, m.Channel, c.sentAt(m.Channel))
			case "unsubscribe", "sunsubscribe":
				if c.unasked(m.Channel) {
					// On a cluster: the channel's slot moved.
					c.h.moved(c, m.Channel, fmt.Errorf("server ended the subscription (%s)", m.Kind))
				}
			}
		case *redis.Pong:
			if !pingSent.IsZero() && m.Payload == token {
				c.h.healthy(c, pingSent)
				nextPing = pingSent.Add(interval)
				pingSent = time.Time{}
			}
		case *redis.Message:
			if m.Channel == TrackChannel && m.Pattern == "" {
				c.h.trackDeliver(c, m.PayloadSlice)
				continue
			}
			c.h.deliver(c, m.Channel, m.Payload)
		}
	}
}
