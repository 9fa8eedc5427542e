package cache

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
)

// The fill listener: a key's fill channel is subscribed, on the client's
// shared pub/sub connection of the key's node (internal/pubsub), while
// someone here waits on it; each fill message wakes the waiters registered
// for its channel.
type fillListener struct {
	mu    sync.Mutex
	chans map[string]*fillChan // by channel
}

// fillChan is one subscribed fill channel. The shared connection calls its
// handler methods, which take only its own lock.
type fillChan struct {
	sub     *pubsub.Sub
	ready   chan struct{} // closed once the subscription is confirmed
	once    sync.Once
	mu      sync.Mutex
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

func (fc *fillChan) Message(string, string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for w := range fc.waiters {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

func (fc *fillChan) Up(string, time.Time) { fc.once.Do(func() { close(fc.ready) }) }

// Waiters poll meanwhile (notifiedPoll bounds what a lost message costs).
func (fc *fillChan) Down(string, error)        {}
func (fc *fillChan) Healthy(string, time.Time) {}
func (fc *fillChan) Report(error)              {}

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
			fc = &fillChan{ready: make(chan struct{}), waiters: map[*fillWaiter]struct{}{}}
			if fc.sub = c.hub.Subscribe(c.closing, t.channel, fc, pubsub.Options{}); fc.sub == nil {
				continue
			}
			if fl.chans == nil {
				fl.chans = map[string]*fillChan{}
			}
			fl.chans[t.channel] = fc
		}
		fc.mu.Lock()
		fc.waiters[w] = struct{}{}
		fc.mu.Unlock()
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
		fc.mu.Lock()
		delete(fc.waiters, w)
		idle := len(fc.waiters) == 0
		fc.mu.Unlock()
		if idle {
			delete(fl.chans, ch)
			fc.sub.Close()
		}
	}
}

// close unsubscribes every fill channel (Close).
func (fl *fillListener) close() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for ch, fc := range fl.chans {
		delete(fl.chans, ch)
		fc.sub.Close()
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
