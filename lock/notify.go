package lock

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/redis/go-redis/v9"
)

// notifier wakes waiting Lock calls when a lock is released, so that they do
// not have to poll. Each release script publishes on the lock's channel; the
// notifier subscribes to the channels that have local waiters. A read lock's
// release wakes every waiting reader of every client. A Mutex release names
// one client, drawn at random from the lock's wait list, where a client
// registers while it has waiters: only that client wakes one waiter (the
// longest waiting), so a handover costs one attempt rather than one per
// client, and no client wins every race by being first to hear of it.
//
// The channels are subscriptions on the go-redis client's shared pub/sub
// connections (internal/pubsub): one per node, shared with every other lock
// Client and Cache on that client, following slot moves and failovers. On a
// cluster the channels are shard channels (SSUBSCRIBE, SPUBLISH), each served
// by the master owning its slot. A channel is subscribed for the first
// waiter and dropped topicLinger after the last one left, so a lock
// contended in bursts does not pay an unsubscribe, a subscribe and a missed
// release for every burst; a sweeper runs while channels are subscribed, so
// an idle client runs no goroutine.
//
// When a subscription was lost (its connection failed, its node stopped
// being the master, its slot moved) a release may have gone unheard: every
// waiter on the channel tries again once it is back. A missed message only
// costs latency anyway: waiters also retry on a backoff timer capped by the
// holder's remaining lease. A client named by a release that has no waiter
// left passes the release on to every client.
type notifier struct {
	rdb     redis.UniversalClient
	hub     *pubsub.Hub
	sharded bool   // shard channels: SSUBSCRIBE / SPUBLISH
	self    string // this client's id, in release messages and on wait lists
	report  option.Reporter
	linger  time.Duration // topicLinger; tests shorten it
	sweepIn time.Duration // sweepEvery; tests shorten it

	// bg bounds the notifier's own calls (wait-list updates, passing on a
	// release, sweeps); close cancels it.
	bg     context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	sweeping bool // the sweeper runs
	topics   map[string]*topic
	wg       sync.WaitGroup
}

// topic is one subscribed channel; it is the subscription's handler.
type topic struct {
	n          *notifier
	sub        *pubsub.Sub
	waitList   string     // where this client registers while it has waiters; "" for none
	regMu      sync.Mutex // serializes wait-list updates, which converge on the waiters
	registered bool       // guarded by regMu
	waiters    []*waiter
	ready      chan struct{} // closed when the subscription is confirmed
	confirmed  bool
	lost       bool      // the subscription was lost: wake the waiters when it is back
	refused    bool      // a refusal by the Redis ACL was logged
	idleSince  time.Time // when the last waiter left; zero while it has waiters
}

type waiter struct {
	c      chan struct{} // a release was announced
	ready  <-chan struct{}
	shared bool
	since  time.Time // when it joined; waiters are woken in this order
	t      *topic
	ch     string
}

const (
	// subscribeTimeout bounds a call made outside any caller's context.
	subscribeTimeout = 5 * time.Second
	// topicLinger is how long a channel stays subscribed without waiters;
	// sweepEvery is how often the sweeper looks for such channels and
	// renews its client's wait-list entries, which last waitListTTL.
	topicLinger = 5 * time.Second
	sweepEvery  = time.Second
	waitListTTL = 3 * sweepEvery
)

func newNotifier(rdb redis.UniversalClient, self string, report option.Reporter) *notifier {
	bg, cancel := context.WithCancel(context.Background())
	n := &notifier{
		bg:      bg,
		cancel:  cancel,
		rdb:     rdb,
		hub:     pubsub.Acquire(rdb),
		self:    self,
		report:  report,
		topics:  make(map[string]*topic),
		linger:  topicLinger,
		sweepIn: sweepEvery,
	}
	n.sharded = n.hub.Sharded()
	return n
}

// publishCmd is the command release scripts announce with.
func (n *notifier) publishCmd() string {
	if n.sharded {
		return "spublish"
	}
	return "publish"
}

// join registers a waiter on channel ch, and this client on waitList if it
// had no waiter there. It returns nil after close.
func (n *notifier) join(ctx context.Context, ch, waitList string, shared bool) *waiter {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	t := n.topics[ch]
	fresh := t == nil
	if fresh {
		t = &topic{n: n, waitList: waitList, ready: make(chan struct{})}
		n.topics[ch] = t
		if !n.sweeping {
			n.sweeping = true
			n.asyncLocked(n.sweeper)
		}
	}
	first := !shared && t.exclusive() == 0
	w := &waiter{c: make(chan struct{}, 1), shared: shared, since: time.Now(), t: t, ch: ch}
	if !t.confirmed || (first && t.waitList != "") {
		// Until the subscription is confirmed, or while this client was
		// not on the wait list (releases are not announced to an empty
		// list), a release may go unheard: the waiter tries once more as
		// soon as ready is closed (at once when it already is).
		w.ready = t.ready
	}
	t.waiters = append(t.waiters, w)
	t.idleSince = time.Time{}
	n.mu.Unlock()
	if fresh {
		// Outside n.mu: the hub calls the topic's handler methods, which
		// take it.
		sub := n.hub.Subscribe(ctx, ch, t, pubsub.Options{})
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			sub.Close() // close came first and could not end it
		} else {
			t.sub = sub
			n.mu.Unlock()
		}
	}
	if first && t.waitList != "" {
		n.syncWaitList(ctx, t, false)
	}
	return w
}

// exclusive counts the waiters for the exclusive lock. n.mu must be held.
func (t *topic) exclusive() int {
	k := 0
	for _, w := range t.waiters {
		if !w.shared {
			k++
		}
	}
	return k
}

// leave unregisters w, and this client from the wait list when w was its
// last waiter. A waiter that leaves without the lock passes on a wake-up it
// did not use, so that it is not lost to the others.
func (n *notifier) leave(w *waiter, obtained bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := w.t
	for i, x := range t.waiters {
		if x == w {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			break
		}
	}
	if len(t.waiters) == 0 {
		t.idleSince = time.Now()
	}
	if !w.shared && t.waitList != "" && t.exclusive() == 0 {
		// Off the wait list, or releases would keep naming this client.
		// Asynchronously: the caller may be on its way out with the lock.
		n.asyncLocked(func() {
			ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
			defer cancel()
			n.syncWaitList(ctx, t, false)
		})
	}
	if !obtained && !w.shared && len(w.c) > 0 {
		n.wakeLocked(w.ch)
	}
}

// syncWaitList puts this client on t's wait list while t has exclusive
// waiters and takes it off otherwise; refresh renews a present entry.
// Updates are serialized and read the waiters when they run, so a join and
// a leave racing each other still leave the entry right.
func (n *notifier) syncWaitList(ctx context.Context, t *topic, refresh bool) {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	n.mu.Lock()
	want := t.exclusive() > 0
	n.mu.Unlock()
	if want == t.registered && !(want && refresh) {
		return
	}
	err := waitListScript.Run(ctx, n.rdb, []string{t.waitList}, n.self, ms(waitListTTL), flag(want)).Err()
	if err != nil {
		n.report.Warn("cacheguard: lock: updating a wait list", err, "key", t.waitList)
		return
	}
	t.registered = want
}

// asyncLocked runs f on a goroutine that close waits for. n.mu must be held.
func (n *notifier) asyncLocked(f func()) {
	if n.closed {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// starving reports whether the oldest exclusive waiter on ch has waited
// longer than d.
func (n *notifier) starving(ch string, d time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t := n.topics[ch]; t != nil {
		for _, w := range t.waiters {
			if !w.shared {
				return time.Since(w.since) > d
			}
		}
	}
	return false
}

// released handles a release message: "releaser|target", where target is
// the client that should wake a waiter ("" for all).
func (n *notifier) released(ch, payload string) {
	target := ""
	if i := strings.LastIndexByte(payload, '|'); i >= 0 {
		target = payload[i+1:]
	}
	if target != "" && target != n.self {
		return
	}
	n.mu.Lock()
	woke := n.wakeLocked(ch)
	if target != "" && !woke {
		// Named, but nobody here waits any more: let every client try.
		n.asyncLocked(func() {
			ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
			defer cancel()
			var err error
			if n.sharded {
				err = n.rdb.SPublish(ctx, ch, n.self+"|").Err()
			} else {
				err = n.rdb.Publish(ctx, ch, n.self+"|").Err()
			}
			if err != nil {
				n.report.Warn("cacheguard: lock: passing on a release", err, "channel", ch)
			}
		})
	}
	n.mu.Unlock()
}

// wakeLocked wakes every shared waiter of ch and the longest waiting
// exclusive one not yet woken. It reports whether ch has any waiter that
// will try again (woken now or before). n.mu must be held.
func (n *notifier) wakeLocked(ch string) bool {
	t := n.topics[ch]
	if t == nil {
		return false
	}
	one := false
	for _, w := range t.waiters {
		if !w.shared && one {
			continue
		}
		select {
		case w.c <- struct{}{}:
			if !w.shared {
				one = true
			}
		default:
			// Already woken and not yet retried.
		}
	}
	return len(t.waiters) > 0
}

func (n *notifier) close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	topics := make([]*topic, 0, len(n.topics))
	for _, t := range n.topics {
		topics = append(topics, t)
	}
	n.mu.Unlock()
	n.cancel()
	for _, t := range topics {
		t.close()
	}
	n.wg.Wait()
	n.hub.Release(time.Time{})
}
