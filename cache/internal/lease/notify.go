package lease

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Waking lease waiters by notification. A caller that finds another
// process's placeholder under a key does not just poll for the fill: it
//
//  1. registers with the cache's fill listener (listener, below), which
//     subscribes, on one pub/sub connection per Redis node, to the key's
//     fill channel and confirms the subscription;
//  2. marks the placeholder as waited for (MarkWaitScript appends
//     wire.WaitMark);
//  3. waits for a message on the channel, retrying SET NX GET when it comes.
//
// The fill's compare-and-set (FillScript), a release (ReleaseScript) and a
// refused fill publish on the key's fill channel; a fill or release publishes
// only when the placeholder was marked, so fills nobody waits for pay nothing
// extra. On a Redis Cluster the channel is a shard channel (SPUBLISH) named
// exactly like the key, so it hashes to the key's slot, as a script's
// commands must.
//
// Pub/sub delivers at most once, so waiters keep polling too, only less often
// while notifications work (notifiedPoll instead of the 2-50 ms backoff): a
// lost message costs at most one poll interval, and a lease whose holder died
// is still taken over once it expires. Where notifications cannot work (a
// Ring, a server without SPUBLISH, a subscription that is not confirmed in
// time) waiters poll as before.

// Waiting for another holder's fill polls, where notifications do not
// work, with exponential backoff between these bounds (jittered), retrying
// SET NX GET each time so that the lease of a holder that died is taken
// over as soon as it expires.
const (
	MinBackoff = 2 * time.Millisecond
	maxBackoff = 50 * time.Millisecond
)

// notifiedPoll is how often a waiter that will be notified still retries
// (at most; see listener.notifiedPoll).
const notifiedPoll = 200 * time.Millisecond

// confirmTimeout bounds the wait for a new subscription's confirmation; past
// it, the waiter polls.
const confirmTimeout = 50 * time.Millisecond

// target is where a lease's fill publishes: cmd is "publish", "spublish"
// or "" (none).
type target struct {
	cmd, channel string
}

func (fl *listener) target(rkey string) target {
	switch fl.rdb.(type) {
	case *redis.Ring:
		// A ring shards channels and keys apart: no script could reach
		// the key's channel.
		return target{}
	case *redis.ClusterClient:
		return target{"spublish", rkey}
	}
	return target{"publish", wire.FillChannelPrefix + rkey}
}

// markWaited marks the placeholders prev[i] of rkeys as waited for, in one
// pipeline; it returns which ones still held them (false: look again now).
func (fl *listener) markWaited(ctx context.Context, rkeys []string, prev [][]byte) ([]bool, error) {
	calls := make([]script.Call, len(rkeys))
	for i, k := range rkeys {
		calls[i] = script.Call{Script: MarkWaitScript, Keys: []string{k}, Args: []any{wire.PlaceholderBase(prev[i])}}
	}
	cmds, err := script.Run(ctx, fl.rdb, calls)
	held := make([]bool, len(rkeys))
	for i, cmd := range cmds {
		n, _ := cmd.Int()
		held[i] = n == 1
		if held[i] && fl.hooks != nil && fl.hooks.OnWaitMarked != nil {
			fl.hooks.OnWaitMarked(rkeys[i])
		}
	}
	return held, err
}

// The fill listener: a key's fill channel is subscribed, on the client's
// shared pub/sub connection of the key's node (internal/pubsub), while
// someone here waits on it; each fill message wakes the waiters registered
// for its channel.
type listener struct {
	rdb     redis.UniversalClient
	hub     *pubsub.Hub
	closing context.Context // cancelled by Close: the subscriptions end
	ttl     time.Duration   // a lease's
	hooks   *hook.Set

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
	waiters map[*Waiter]struct{}
}

// Waiter is one call waiting for fills of one or more keys.
type Waiter struct {
	fl       *listener
	ch       chan struct{} // a fill message arrived for one of channels
	channels []string
	// OK: every channel's subscription was confirmed, so a fill that lands
	// after the waiter marks its placeholder is announced to it.
	OK bool
}

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

// listen registers a waiter for the fill channels of rkeys, subscribing
// where needed. It returns nil when notifications are off for this client.
func (fl *listener) listen(ctx context.Context, rkeys []string) *Waiter {
	if fl.target(rkeys[0]).cmd == "" || (fl.hooks != nil && fl.hooks.NoFillNotify) {
		return nil
	}
	w := &Waiter{fl: fl, ch: make(chan struct{}, 1)}
	var readies []chan struct{}
	fl.mu.Lock()
	for _, rk := range rkeys {
		t := fl.target(rk)
		fc := fl.chans[t.channel]
		if fc == nil {
			fc = &fillChan{ready: make(chan struct{}), waiters: map[*Waiter]struct{}{}}
			if fc.sub = fl.hub.Subscribe(fl.closing, t.channel, fc, pubsub.Options{}); fc.sub == nil {
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
	w.OK = true
	return w
}

// Leave unregisters w; channels nobody waits on any more are unsubscribed.
func (w *Waiter) Leave() {
	if w != nil {
		w.fl.leave(w)
	}
}

func (fl *listener) leave(w *Waiter) {
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
func (fl *listener) close() {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for ch, fc := range fl.chans {
		delete(fl.chans, ch)
		fc.sub.Close()
	}
}

// await waits out one step of a lease wait: until w hears a fill, the
// next poll (notifiedPoll when w is confirmed, else one step of the 2-50 ms
// backoff), the end of left, or ctx.
func (fl *listener) await(ctx context.Context, w *Waiter, backoff *time.Duration, left time.Duration, key string) error {
	var d time.Duration
	var wake <-chan struct{}
	if w != nil && w.OK {
		d, wake = min(fl.notifiedPoll(), left), w.ch
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
		if fl.hooks != nil && fl.hooks.OnWake != nil {
			fl.hooks.OnWake(key, true)
		}
	case <-t.C:
		if fl.hooks != nil && fl.hooks.OnWake != nil {
			fl.hooks.OnWake(key, false)
		}
	}
	return nil
}

// notifiedPoll is notifiedPoll, or half the lease if that is shorter, so that
// a lease whose holder died is taken over well within one lease after it
// expires.
func (fl *listener) notifiedPoll() time.Duration {
	if fl.hooks != nil && fl.hooks.NotifiedPoll > 0 {
		return fl.hooks.NotifiedPoll
	}
	return max(min(notifiedPoll, fl.ttl/2), MinBackoff)
}
