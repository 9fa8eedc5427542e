package cache

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fill listener: one pub/sub connection per Redis node (one in all on a
// single node), opened on the first lease wait and kept until Close, with a
// goroutine that hands each fill message to the waiters registered for its
// channel. A channel is subscribed while someone here waits on it.
type fillListener struct {
	mu    sync.Mutex
	subs  map[string]*fillSub  // by node address ("" on a single node)
	chans map[string]*fillChan // by channel
}

type fillSub struct {
	ps      *redis.PubSub
	sharded bool
}

type fillChan struct {
	sub     *fillSub
	ready   chan struct{} // closed once the subscription is confirmed
	waiters map[*fillWaiter]struct{}
}

// fillWaiter is one call waiting for fills of one or more keys.
type fillWaiter struct {
	c        fillLeaver
	ch       chan struct{} // a fill message arrived for one of channels
	channels []string
	// ok: every channel's subscription was confirmed, so a fill that lands
	// after the waiter marks its placeholder is announced to it.
	ok bool
}

type fillLeaver interface{ leaveFills(*fillWaiter) }

// listenFills registers a waiter for the fill channels of rkeys, subscribing
// where needed. It returns nil when notifications are off for this client.
func (c *Cache[V]) listenFills(ctx context.Context, rkeys []string) *fillWaiter {
	if c.notifyTarget(rkeys[0]).cmd == "" || (c.hooks != nil && c.hooks.noFillNotify) {
		return nil
	}
	w := &fillWaiter{c: c, ch: make(chan struct{}, 1)}
	fl := &c.fills
	var readies []chan struct{}
	fl.mu.Lock()
	for _, rk := range rkeys {
		t := c.notifyTarget(rk)
		fc := fl.chans[t.channel]
		if fc == nil {
			sub := c.fillSubFor(ctx, rk, t.channel)
			if sub == nil {
				continue
			}
			fc = &fillChan{sub: sub, ready: make(chan struct{}), waiters: map[*fillWaiter]struct{}{}}
			if fl.chans == nil {
				fl.chans = map[string]*fillChan{}
			}
			fl.chans[t.channel] = fc
		}
		fc.waiters[w] = struct{}{}
		w.channels = append(w.channels, t.channel)
		readies = append(readies, fc.ready)
	}
	fl.mu.Unlock()
	if len(w.channels) < len(rkeys) {
		return w // some channel could not be subscribed: poll
	}
	t := time.NewTimer(confirmTimeout)
	defer t.Stop()
	for _, r := range readies {
		select {
		case <-r:
		case <-t.C:
			return w
		case <-ctx.Done():
			return w
		}
	}
	w.ok = true
	return w
}

// fillSubFor returns the subscription connection for the node that owns
// channel, subscribing channel on it (fl.mu held). nil: none can be had.
func (c *Cache[V]) fillSubFor(ctx context.Context, rkey, channel string) *fillSub {
	fl := &c.fills
	node := ""
	cc, sharded := c.rdb.(*redis.ClusterClient)
	if sharded {
		m, err := cc.MasterForKey(ctx, rkey)
		if err != nil {
			return nil
		}
		node = m.Options().Addr
	}
	if s := fl.subs[node]; s != nil {
		var err error
		if s.sharded {
			err = s.ps.SSubscribe(c.closing, channel)
		} else {
			err = s.ps.Subscribe(c.closing, channel)
		}
		if err != nil {
			return nil
		}
		return s
	}
	s := &fillSub{sharded: sharded}
	if sharded {
		s.ps = cc.SSubscribe(c.closing, channel)
	} else {
		s.ps = c.rdb.Subscribe(c.closing, channel)
	}
	if !c.goBackground(func() { c.receiveFills(s) }) {
		s.ps.Close()
		return nil
	}
	if fl.subs == nil {
		fl.subs = map[string]*fillSub{}
	}
	fl.subs[node] = s
	return s
}

// receiveFills reads one subscription connection until Close. go-redis
// reconnects and subscribes again by itself after a connection error.
func (c *Cache[V]) receiveFills(s *fillSub) {
	stop := context.AfterFunc(c.closing, func() { s.ps.Close() })
	defer stop()
	defer s.ps.Close()
	for {
		msg, err := s.ps.Receive(c.closing)
		if c.closing.Err() != nil {
			return
		}
		if err != nil {
			// Waiters poll meanwhile; do not spin on a failing node.
			t := time.NewTimer(subscribeRetryMin + rand.N(subscribeRetryMin))
			select {
			case <-c.closing.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
				c.fills.mu.Lock()
				if fc := c.fills.chans[m.Channel]; fc != nil && fc.sub == s {
					select {
					case <-fc.ready:
					default:
						close(fc.ready)
					}
				}
				c.fills.mu.Unlock()
			}
		case *redis.Message:
			c.fills.mu.Lock()
			if fc := c.fills.chans[m.Channel]; fc != nil {
				for w := range fc.waiters {
					select {
					case w.ch <- struct{}{}:
					default:
					}
				}
			}
			c.fills.mu.Unlock()
		}
	}
}

// leave unregisters w; channels nobody waits on any more are unsubscribed.
func (w *fillWaiter) leave() {
	if w != nil {
		w.c.leaveFills(w)
	}
}

func (c *Cache[V]) leaveFills(w *fillWaiter) {
	fl := &c.fills
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for _, ch := range w.channels {
		fc := fl.chans[ch]
		if fc == nil {
			continue
		}
		delete(fc.waiters, w)
		if len(fc.waiters) > 0 {
			continue
		}
		delete(fl.chans, ch)
		// Best effort: a channel left subscribed only costs the odd
		// message nobody reads.
		if fc.sub.sharded {
			_ = fc.sub.ps.SUnsubscribe(c.closing, ch)
		} else {
			_ = fc.sub.ps.Unsubscribe(c.closing, ch)
		}
	}
}

// awaitFill waits out one step of a lease wait: until w hears a fill, the
// next poll (notifiedPoll when w is confirmed, else one step of the 2-50 ms
// backoff), the end of left, or ctx.
func (c *Cache[V]) awaitFill(ctx context.Context, w *fillWaiter, backoff *time.Duration, left time.Duration, key string) error {
	var d time.Duration
	var wake <-chan struct{}
	if w != nil && w.ok {
		d, wake = min(c.notifiedPoll(), left), w.ch
	} else {
		d = min(*backoff/2+rand.N(*backoff/2+1), left)
		*backoff = min(2**backoff, maxBackoff)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		if c.hooks != nil && c.hooks.onWake != nil {
			c.hooks.onWake(key, true)
		}
	case <-t.C:
		if c.hooks != nil && c.hooks.onWake != nil {
			c.hooks.onWake(key, false)
		}
	}
	return nil
}

// notifiedPoll is notifiedPoll, or half the lease if that is shorter, so that
// a lease whose holder died is taken over well within one lease after it
// expires.
func (c *Cache[V]) notifiedPoll() time.Duration {
	if c.hooks != nil && c.hooks.notifiedPoll > 0 {
		return c.hooks.notifiedPoll
	}
	return max(min(notifiedPoll, c.cfg.lease/2), minBackoff)
}
