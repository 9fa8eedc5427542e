package lock

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
)

// A topic's life: the sweeper drops channels idle for the linger time, and
// the shared connection's events (pubsub.Handler) confirm a subscription,
// report it lost, and deliver releases.

// sweeper sweeps every sweepIn while channels are subscribed.
func (n *notifier) sweeper() {
	t := time.NewTimer(n.sweepIn)
	defer t.Stop()
	for {
		select {
		case <-n.bg.Done():
			return
		case <-t.C:
		}
		if !n.sweep() {
			return
		}
		t.Reset(n.sweepIn)
	}
}

// sweep drops the channels that have had no waiter for the linger time, and
// renews this client's wait-list entries for the others. It reports whether
// channels are left (false: the sweeper has stopped).
func (n *notifier) sweep() bool {
	now := time.Now()
	var idle []*topic
	var active []*topic
	n.mu.Lock()
	for ch, t := range n.topics {
		switch {
		case len(t.waiters) == 0 && now.Sub(t.idleSince) >= n.linger:
			delete(n.topics, ch)
			idle = append(idle, t)
		case t.waitList != "" && t.exclusive() > 0:
			active = append(active, t)
		}
	}
	left := len(n.topics) > 0
	n.sweeping = left
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
	defer cancel()
	for _, t := range active {
		n.syncWaitList(ctx, t, true)
	}
	for _, t := range idle {
		t.close()
	}
	return left
}

// close ends t's subscription once join has set it.
func (t *topic) close() {
	t.n.mu.Lock()
	sub := t.sub
	t.sub = nil
	t.n.mu.Unlock()
	sub.Close()
}

// The subscription's events (pubsub.Handler).

func (t *topic) Message(ch, payload string) { t.n.released(ch, payload) }

func (t *topic) Up(ch string, _ time.Time) {
	n := t.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if t.confirmed {
		return
	}
	t.confirmed = true
	close(t.ready)
	if t.lost {
		// Releases may have gone unheard meanwhile: every waiter tries
		// again.
		t.lost = false
		if n.topics[ch] == t {
			n.wakeLocked(ch)
		}
	}
}

func (t *topic) Down(ch string, err error) {
	n := t.n
	n.mu.Lock()
	if t.confirmed {
		t.confirmed = false
		t.ready = make(chan struct{})
	}
	t.lost = true
	first := pubsub.Refused(err) && !t.refused
	if first {
		t.refused = true
	}
	n.mu.Unlock()
	if first {
		// Waiters poll (on their backoff, capped by the holder's lease)
		// until the channel is granted; logged once per channel.
		n.report.Warn("cacheguard: lock: release notifications refused by the Redis ACL; waiters poll until the user is granted the lock channels (see docs/acl.md)", err,
			"channel", ch)
	}
}

func (t *topic) Healthy(string, time.Time) {}

func (t *topic) Report(err error) {
	t.n.report.Warn("cacheguard: lock: release notifications", err)
}
