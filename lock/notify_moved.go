package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Slot migration. When a cluster slot moves to another master, the old
// master drops its shard-channel subscribers of that slot with an
// unsolicited SUNSUBSCRIBE. The channel's waiters would then hear no
// release until their backoff runs out (up to the holder's lease). So the
// reader hands such a channel to the connection of the master that now owns
// the slot, and once the new subscription is confirmed it wakes the
// channel's waiters: a release may have gone unheard meanwhile.

// movedPoll is how often rehome looks again for the slot's new master while
// the cluster client's view of the slots still names the old one.
const movedPoll = 20 * time.Millisecond

// dropped handles a SUNSUBSCRIBE of ch on sc. It reports whether the server
// sent it on its own (sc was still meant to carry ch): ch is then moved to
// the master that now serves it, in the background.
func (n *notifier) dropped(sc *subConn, ch string) {
	sc.opMu.Lock()
	unasked := sc.subscribed[ch] && !sc.stopped
	if unasked {
		delete(sc.subscribed, ch)
	}
	sc.opMu.Unlock()
	if !unasked {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.asyncLocked(func() { n.rehome(sc, ch) })
}

// rehome moves channel ch from sc to the connection of the master that now
// owns its slot, and subscribes it there.
func (n *notifier) rehome(sc *subConn, ch string) {
	ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
	defer cancel()
	key, sub := n.nodeOf(ctx, ch)
	if cc, ok := n.rdb.(*redis.ClusterClient); ok {
		// The client learns of the move lazily: ask it to reload and wait
		// until it names another master (or give up and use what it says).
		t := time.NewTimer(movedPoll)
		defer t.Stop()
		for key == sc.key {
			cc.ReloadState(ctx)
			t.Reset(movedPoll)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			if ctx.Err() != nil {
				break
			}
			key, sub = n.nodeOf(ctx, ch)
		}
	}
	n.mu.Lock()
	t := n.topics[ch]
	if n.closed || t == nil || t.conn != sc {
		n.mu.Unlock()
		return
	}
	to := n.conns[key]
	if to == nil {
		to = &subConn{key: key, sub: sub, topics: make(map[string]*topic),
			subscribed: make(map[string]bool), stop: make(chan struct{})}
		n.conns[key] = to
	}
	delete(sc.topics, ch)
	t.conn = to
	to.topics[ch] = t
	if t.confirmed {
		t.confirmed = false
		t.ready = make(chan struct{})
	}
	t.moved = true
	n.mu.Unlock()
	n.sync(ctx, to, ch)
	n.sync(ctx, sc, ch) // closes sc if it carries nothing else
}
