package lock

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

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
// One connection per node carries every channel this client waits on there:
// on a single server (or sentinel) that is one connection in all; on a
// cluster the channels are shard channels (SSUBSCRIBE, SPUBLISH), each
// served by the master owning its slot, so there is one connection per
// master, whatever the number of locks waited for. A connection is opened
// for the first waiter on its node and closed a few seconds after the last
// one left, so an idle client holds no connection and runs no goroutine.
//
// go-redis subscribes a reconnected PubSub to all its channels in one
// command, which a cluster refuses for shard channels of different slots
// (CROSSSLOT). So a connection is never left to reconnect on its own: after
// an error the reader replaces it, subscribing each channel with its own
// command, and wakes every waiter on it (a release may have gone unheard).
//
// A missed message only costs latency: waiters also retry on a backoff timer
// capped by the holder's remaining lease. A client named by a release that
// has no waiter left passes the release on to every client.
type notifier struct {
	rdb     redis.UniversalClient
	sharded bool   // shard channels: SSUBSCRIBE / SPUBLISH
	perChan bool   // one connection per channel (a Ring routes by channel)
	self    string // this client's id, in release messages and on wait lists
	logger  *slog.Logger
	linger  time.Duration // topicLinger; tests shorten it
	sweepIn time.Duration // sweepEvery; tests shorten it

	// bg bounds the notifier's own calls (wait-list updates, passing on a
	// release, sweeps); close cancels it.
	bg     context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	topics map[string]*topic
	conns  map[string]*subConn
	wg     sync.WaitGroup
}

// topic is one subscribed channel. It outlives its last waiter by
// topicLinger, so that a lock contended in bursts does not pay an
// unsubscribe, a subscribe and a missed release for every burst.
type topic struct {
	conn       *subConn
	waitList   string     // where this client registers while it has waiters; "" for none
	regMu      sync.Mutex // serializes wait-list updates, which converge on the waiters
	registered bool       // guarded by regMu
	waiters    []*waiter
	ready      chan struct{} // closed when the server confirmed the subscription
	confirmed  bool
	moved      bool      // re-subscribed after a slot migration: wake the waiters on confirmation
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

// subConn is one subscriber connection. Subscribe and unsubscribe calls on
// it are serialized by opMu and always bring it to the state the topics ask
// for at that moment, so concurrent joins and leaves cannot leave it wrong.
type subConn struct {
	key        string
	sub        redis.UniversalClient // the node's client
	topics     map[string]*topic     // guarded by notifier.mu
	opMu       sync.Mutex
	ps         *redis.PubSub   // guarded by opMu until the reader starts
	subscribed map[string]bool // guarded by opMu
	stopped    bool            // guarded by opMu
	stop       chan struct{}
}

const (
	// subscribeTimeout bounds a subscription change made outside any
	// caller's context.
	subscribeTimeout = 5 * time.Second
	// readRetry is the pause after a failed read on a subscriber connection
	// (go-redis reconnects and resubscribes on the next read).
	readRetry = 100 * time.Millisecond
	// topicLinger is how long a channel stays subscribed without waiters;
	// sweepEvery is how often a reader looks for such channels and renews
	// its client's wait-list entries, which last waitListTTL.
	topicLinger = 5 * time.Second
	sweepEvery  = time.Second
	waitListTTL = 3 * sweepEvery
)

func newNotifier(rdb redis.UniversalClient, self string, logger *slog.Logger) *notifier {
	bg, cancel := context.WithCancel(context.Background())
	n := &notifier{
		bg:      bg,
		cancel:  cancel,
		rdb:     rdb,
		self:    self,
		logger:  logger,
		topics:  make(map[string]*topic),
		conns:   make(map[string]*subConn),
		linger:  topicLinger,
		sweepIn: sweepEvery,
	}
	switch rdb.(type) {
	case *redis.ClusterClient:
		n.sharded, n.perChan = true, true
	case *redis.Ring:
		// A ring routes each subscription by channel name.
		n.perChan = true
	}
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
		key, sub := n.nodeOf(ctx, ch)
		sc := n.conns[key]
		if sc == nil {
			sc = &subConn{key: key, sub: sub, topics: make(map[string]*topic),
				subscribed: make(map[string]bool), stop: make(chan struct{})}
			n.conns[key] = sc
		}
		t = &topic{conn: sc, waitList: waitList, ready: make(chan struct{})}
		n.topics[ch] = t
		sc.topics[ch] = t
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
		n.sync(ctx, t.conn, ch)
	}
	if first && t.waitList != "" {
		n.syncWaitList(ctx, t, false)
	}
	return w
}

// nodeOf returns the key of the connection that serves channel ch and the
// client of its node: the master owning ch's slot on a cluster.
func (n *notifier) nodeOf(ctx context.Context, ch string) (string, redis.UniversalClient) {
	switch c := n.rdb.(type) {
	case *redis.ClusterClient:
		if node, err := c.MasterForKey(ctx, ch); err == nil {
			return node.Options().Addr, node
		}
		// Slots unknown for now: a connection of its own, routed by the
		// cluster client.
		return ch, n.rdb
	case *redis.Ring:
		return ch, n.rdb
	}
	return "", n.rdb
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
		n.logger.Warn("lock: updating a wait list", "key", t.waitList, "err", err)
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

// sweep drops the channels of sc that have had no waiter for the linger
// time, and renews this client's wait-list entries for the others.
func (n *notifier) sweep(sc *subConn) {
	now := time.Now()
	var idle []string
	var active []*topic
	n.mu.Lock()
	for ch, t := range sc.topics {
		switch {
		case len(t.waiters) == 0 && now.Sub(t.idleSince) >= n.linger:
			delete(sc.topics, ch)
			if n.topics[ch] == t {
				delete(n.topics, ch)
			}
			idle = append(idle, ch)
		case t.waitList != "" && t.exclusive() > 0:
			active = append(active, t)
		}
	}
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
	defer cancel()
	for _, t := range active {
		n.syncWaitList(ctx, t, true)
	}
	for _, ch := range idle {
		n.sync(ctx, sc, ch)
	}
}

// sync subscribes sc to ch or unsubscribes it, whichever the topics now ask
// for, and closes a per-channel connection nobody needs any more.
func (n *notifier) sync(ctx context.Context, sc *subConn, ch string) {
	sc.opMu.Lock()
	defer sc.opMu.Unlock()
	if sc.stopped {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	t := n.topics[ch]
	want := t != nil && t.conn == sc
	drop := !want && len(sc.topics) == 0 && n.conns[sc.key] == sc
	if drop {
		delete(n.conns, sc.key)
	}
	startReader := want && sc.ps == nil
	if startReader {
		n.wg.Add(1)
	}
	n.mu.Unlock()

	have := sc.subscribed[ch]
	switch {
	case want && !have:
		if sc.ps == nil {
			sc.ps = n.newPubSub(ctx, sc)
		}
		var err error
		if n.sharded {
			err = sc.ps.SSubscribe(ctx, ch)
		} else {
			err = sc.ps.Subscribe(ctx, ch)
		}
		// Even after an error go-redis keeps the channel and subscribes
		// again when it reconnects.
		sc.subscribed[ch] = true
		if err != nil {
			n.logger.Warn("lock: subscribing to release notifications", "channel", ch, "err", err)
		}
	case !want && have:
		var err error
		if n.sharded {
			err = sc.ps.SUnsubscribe(ctx, ch)
		} else {
			err = sc.ps.Unsubscribe(ctx, ch)
		}
		delete(sc.subscribed, ch)
		if err != nil {
			n.logger.Warn("lock: unsubscribing from release notifications", "channel", ch, "err", err)
		}
	}
	if startReader {
		go n.read(sc)
	}
	if drop {
		sc.shut()
	}
}

func (n *notifier) newPubSub(ctx context.Context, sc *subConn) *redis.PubSub {
	if n.sharded {
		return sc.sub.SSubscribe(ctx)
	}
	return sc.sub.Subscribe(ctx)
}

// replace swaps sc's connection for a new one subscribed to the same
// channels, one command each, after a read error.
func (n *notifier) replace(sc *subConn) {
	sc.opMu.Lock()
	defer sc.opMu.Unlock()
	if sc.stopped {
		return
	}
	ctx, cancel := context.WithTimeout(n.bg, subscribeTimeout)
	defer cancel()
	_ = sc.ps.Close()
	sc.ps = n.newPubSub(ctx, sc)
	n.mu.Lock()
	for _, t := range sc.topics {
		if t.confirmed {
			t.confirmed = false
			t.ready = make(chan struct{})
		}
	}
	n.mu.Unlock()
	for ch := range sc.subscribed {
		var err error
		if n.sharded {
			err = sc.ps.SSubscribe(ctx, ch)
		} else {
			err = sc.ps.Subscribe(ctx, ch)
		}
		if err != nil {
			n.logger.Warn("lock: subscribing to release notifications", "channel", ch, "err", err)
		}
	}
	// Releases may have gone unheard meanwhile: every waiter tries again.
	n.mu.Lock()
	for ch := range sc.topics {
		n.wakeLocked(ch)
	}
	n.mu.Unlock()
}

// shut stops sc's reader and closes its connection. opMu must be held.
func (sc *subConn) shut() {
	if sc.stopped {
		return
	}
	sc.stopped = true
	close(sc.stop)
	if sc.ps != nil {
		_ = sc.ps.Close()
	}
}

// read delivers the messages of one subscriber connection until it is shut,
// sweeping idle channels on the way.
func (n *notifier) read(sc *subConn) {
	defer n.wg.Done()
	lastSweep := time.Now()
	for {
		if time.Since(lastSweep) >= n.sweepIn {
			n.sweep(sc)
			lastSweep = time.Now()
		}
		sc.opMu.Lock()
		ps, stopped := sc.ps, sc.stopped
		sc.opMu.Unlock()
		if stopped {
			return
		}
		msg, err := ps.ReceiveTimeout(context.Background(), n.sweepIn)
		if err != nil {
			select {
			case <-sc.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // quiet: time to sweep
			}
			n.logger.Debug("lock: reading release notifications", "err", err)
			t := time.NewTimer(readRetry)
			select {
			case <-sc.stop:
				t.Stop()
				return
			case <-t.C:
			}
			n.replace(sc)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				n.confirm(sc, m.Channel)
			case "sunsubscribe":
				n.dropped(sc, m.Channel)
			}
		case *redis.Message:
			n.released(m.Channel, m.Payload)
		}
	}
}

func (n *notifier) confirm(sc *subConn, ch string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t := n.topics[ch]; t != nil && t.conn == sc && !t.confirmed {
		t.confirmed = true
		close(t.ready)
		if t.moved {
			t.moved = false
			n.wakeLocked(ch)
		}
	}
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
				n.logger.Warn("lock: passing on a release", "channel", ch, "err", err)
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
	conns := make([]*subConn, 0, len(n.conns))
	for _, sc := range n.conns {
		conns = append(conns, sc)
	}
	n.mu.Unlock()
	n.cancel()
	for _, sc := range conns {
		sc.opMu.Lock()
		sc.shut()
		sc.opMu.Unlock()
	}
	n.wg.Wait()
}
