package pubsub

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// Handler receives the events of one subscription. Calls for the handlers of
// one Hub are serialized; a handler must not call back into the Hub.
type Handler interface {
	// Message is a message published on the channel.
	Message(channel, payload string)
	// Up: the subscription is confirmed on the channel's master; every
	// message published after since is delivered from now on.
	Up(channel string, since time.Time)
	// Healthy: a health PING sent at sent was answered by the channel's
	// master; every message published before sent has been delivered.
	Healthy(channel string, sent time.Time)
	// Down: the subscription is lost until the next Up; messages may have
	// been lost.
	Down(channel string, err error)
	// Report tells of a problem that does not end the subscription.
	Report(err error)
}

// Options tune one subscription. The zero value works.
type Options struct {
	// HealthInterval and HealthTimeout: the connection carrying the
	// channel sends a PING at least every HealthInterval and wants its
	// reply within HealthTimeout (1 s each when zero). A connection uses
	// the shortest of its subscriptions'.
	HealthInterval, HealthTimeout time.Duration
	// Hooks are interleaving points for tests; nil in production.
	Hooks *Hooks
}

// Hooks are interleaving points for tests.
type Hooks struct {
	BeforeRole func() // the session is about to ask its node's ROLE
	NotMaster  func() // the node is not the channel's master
	// BeforeUnsubscribe: Close of the channel's last handler has taken it
	// out of the Hub and is about to unsubscribe it on its connection.
	BeforeUnsubscribe func()
}

const defaultHealth = time.Second

// Hub multiplexes the subscriptions of one go-redis client.
type Hub struct {
	rdb   redis.UniversalClient
	route router
	refs  int // guarded by registry.mu

	bg     context.Context // cancelled by close
	cancel context.CancelFunc

	mu     sync.Mutex // guards what follows, and serializes handler calls
	closed bool
	chans  map[string]*channel
	conns  map[string]*conn
	track  trackHub // Trackers (track.go)
	// services are the client's shared background work (service.go).
	services map[string]Service
	// goroutines counts the connections' goroutines and the searches for a
	// moved channel's node: the last Release waits for them.
	goroutines call.Flight
}

// channel is one subscribed channel and its handlers.
type channel struct {
	name  string
	subs  []*Sub
	conn  *conn // nil while no node is known
	up    bool  // confirmed on conn in its current session
	since time.Time
}

// Sub is one handler's subscription to a channel.
type Sub struct {
	h    *Hub
	name string
	hd   Handler
	opt  Options
}

var registry struct {
	mu   sync.Mutex
	hubs map[redis.UniversalClient]*Hub
}

// Acquire returns rdb's Hub, making it on first use. Pair it with Release.
func Acquire(rdb redis.UniversalClient) *Hub {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	h := registry.hubs[rdb]
	if h == nil {
		if registry.hubs == nil {
			registry.hubs = map[redis.UniversalClient]*Hub{}
		}
		h = &Hub{rdb: rdb, route: newRouter(rdb), chans: map[string]*channel{}, conns: map[string]*conn{}}
		h.bg, h.cancel = context.WithCancel(context.Background())
		registry.hubs[rdb] = h
	}
	h.refs++
	return h
}

// Release gives back one Acquire; the last closes the Hub's connections and
// waits for its goroutines until deadline (the zero time: as long as they
// take). A goroutine still dialling a frozen server ends within the go-redis
// client's own timeouts; Release then returns an error wrapping
// context.DeadlineExceeded.
func (h *Hub) Release(deadline time.Time) error {
	registry.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last {
		delete(registry.hubs, h.rdb)
	}
	registry.mu.Unlock()
	if last {
		return h.close(deadline)
	}
	return nil
}

// Sharded reports whether channels are shard channels (SPUBLISH).
func (h *Hub) Sharded() bool { return h.route.sharded }

// Conns returns how many connections the Hub holds.
func (h *Hub) Conns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// Subscribe adds hd to channel name, subscribing it if it is new. If the
// channel is already up, hd hears Up at once. It returns nil once the Hub is
// closed.
func (h *Hub) Subscribe(ctx context.Context, name string, hd Handler, opt Options) *Sub {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	s := &Sub{h: h, name: name, hd: hd, opt: opt}
	if ch := h.chans[name]; ch != nil {
		ch.subs = append(ch.subs, s)
		if ch.up {
			// Subscribed and confirmed: from now on it hears what the
			// others hear.
			hd.Up(name, time.Now())
		}
		h.mu.Unlock()
		return s
	}
	ch := &channel{name: name, subs: []*Sub{s}}
	h.chans[name] = ch
	h.mu.Unlock()
	key, node, err := h.route.nodeOf(ctx, name)
	if err != nil {
		h.goLocked(func() { h.rehome(name, nil) })
		return s
	}
	h.assign(name, key, node)
	return s
}

// assign puts channel name on the connection for key, making that connection
// if needed, and subscribes it there.
func (h *Hub) assign(name, key string, node *node) {
	h.mu.Lock()
	ch := h.chans[name]
	if h.closed || ch == nil || ch.conn != nil {
		h.mu.Unlock()
		return
	}
	c := h.conns[key]
	if c == nil {
		c = newConn(h, key, node)
		h.conns[key] = c
		h.goroutines.Go(c.run)
	}
	ch.conn = c
	c.chans[name] = ch
	h.mu.Unlock()
	c.subscribe(name)
}

// Close removes the subscription; the channel is unsubscribed with its last
// handler, and a connection closed with its last channel.
func (s *Sub) Close() {
	if s == nil {
		return
	}
	h := s.h
	h.mu.Lock()
	ch := h.chans[s.name]
	if ch == nil {
		h.mu.Unlock()
		return
	}
	for i, x := range ch.subs {
		if x == s {
			ch.subs = append(ch.subs[:i], ch.subs[i+1:]...)
			break
		}
	}
	if len(ch.subs) > 0 {
		h.mu.Unlock()
		return
	}
	delete(h.chans, s.name)
	c := ch.conn
	empty := false
	if c != nil {
		delete(c.chans, s.name)
		if empty = len(c.chans) == 0 && !c.track.duty; empty && h.conns[c.key] == c {
			delete(h.conns, c.key)
		}
	}
	h.mu.Unlock()
	switch {
	case c == nil:
	case empty:
		c.shut()
	default:
		if s.opt.Hooks != nil && s.opt.Hooks.BeforeUnsubscribe != nil {
			s.opt.Hooks.BeforeUnsubscribe()
		}
		c.unsubscribe(s.name)
	}
}

// goLocked runs f on a goroutine that close waits for, unless closed.
func (h *Hub) goLocked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.goroutines.Go(f)
}

func (h *Hub) close(deadline time.Time) error {
	h.mu.Lock()
	h.closed = true
	conns := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.conns = map[string]*conn{}
	h.mu.Unlock()
	h.cancel()
	for _, c := range conns {
		c.shut()
	}
	h.stopServices()
	wait := time.Duration(math.MaxInt64)
	if !deadline.IsZero() {
		wait = time.Until(deadline)
	}
	if !h.goroutines.Wait(wait) {
		return kind.Errorf("cacheguard: pubsub: connections still closing at the deadline: %w", context.DeadlineExceeded)
	}
	h.route.close()
	return nil
}
