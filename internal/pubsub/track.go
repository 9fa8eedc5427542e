package pubsub

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// Server-assisted invalidation: Redis's client-side caching in broadcasting
// mode, on the Hub's own connections.
//
// A Tracker asks to hear of every change to a key under a prefix on every
// master, whoever makes it (another service, redis-cli, an expiry, an
// eviction, a flush). While a Hub has Trackers, it keeps a connection on
// every master (the one its channels of that node use, or one of its own),
// and every such connection also subscribes the channel __redis__:invalidate
// with a plain SUBSCRIBE, even on a cluster. It is armed as it is dialled:
// go-redis's OnConnect, the one point where a command can run on a pub/sub
// connection, sends CLIENT ID and then CLIENT TRACKING on REDIRECT <that id>
// BCAST PREFIX <each prefix of the Hub's Trackers>. The connection redirects
// to itself, so tracking and its subscriber never part: a session that ends
// takes both, and the next session's dial arms again; the redirect cannot
// break while the subscriber lives (tracking-redir-broken never comes). The
// connection speaks RESP2 (in RESP3 Redis sends invalidations as push
// replies, not as messages of the channel). NOLOOP is not asked for: it only
// mutes the tracking connection's own writes, and this one writes nothing.
//
// A Tracker is Up once every master's connection is armed with a prefix
// covering its own and subscribed, Healthy as of the oldest of the masters'
// last health PINGs (the invalidations of a write reach the connection before
// the reply to a PING sent after it), and Down as soon as one master's is
// not: its session ended, its arming failed, or a master turned up that has
// no armed connection yet (a failover, a slot moved to a new master). The
// list of masters is read when a Tracker is added, after a tracking session
// ends, and every health interval on a cluster.
//
// A Tracker added with a prefix the armed connections do not cover ends their
// sessions (their other handlers hear Down, then Up): tracking prefixes are
// set when a connection is dialled. Closing the last Tracker leaves the
// connections armed until their next session; what they hear then goes
// nowhere.

// TrackChannel is the channel Redis sends tracking invalidations on.
const TrackChannel = "__redis__:invalidate"

// ErrTrackingUnsupported: tracking needs a *redis.Client, a Sentinel
// failover client or a *redis.ClusterClient (a Ring or another
// UniversalClient has no master list to arm).
var ErrTrackingUnsupported = errors.New("tracking needs a *redis.Client, a failover client or a *redis.ClusterClient")

// TrackHandler receives the events of one Tracker. Calls are serialized with
// those of the Hub's other handlers; a handler must not call back into the Hub.
type TrackHandler interface {
	// Invalidate: keys under a tracked prefix (this Tracker's or another
	// of the Hub's) changed; nil keys: a node was flushed, every key may
	// have changed.
	Invalidate(keys []string)
	// Up: every master is armed and subscribed; every change made before
	// since (the oldest of the masters' session starts and health replies)
	// has been delivered, and every later one will be.
	Up(since time.Time)
	// Healthy: every change made before sent has been delivered.
	Healthy(sent time.Time)
	// Down: some master is not armed until the next Up; changes may have
	// been missed.
	Down(err error)
	// Report tells of a problem that does not change the state.
	Report(err error)
}

// Tracker is one prefix's tracking on a Hub.
type Tracker struct {
	h      *Hub
	prefix string
	hd     TrackHandler
	opt    Options
	up     bool // under h.mu
	proof  time.Time
}

// trackHub is the Hub's tracking state, under h.mu.
type trackHub struct {
	trackers []*Tracker
	masters  map[string]bool // keys of the masters' connections; nil until listed
	kick     chan struct{}   // asks the sync loop to list the masters now
	looping  bool
}

// connTrack is a connection's tracking state: duty under h.mu, armed under
// armMu (written by OnConnect during a dial).
type connTrack struct {
	duty     bool          // c must carry tracking (its node is a master)
	up       bool          // armed and subscribed in the current session
	since    time.Time     // when the session's SUBSCRIBE was sent
	proof    time.Time     // latest time before which every change was delivered
	prefixes []string      // what the current session armed
	ps       *redis.PubSub // the armed session
	client   *redis.Client // dials the connection (RESP2, arming OnConnect); under opMu
	arm      armResult     // under armMu
}

type armResult struct {
	prefixes []string
	err      error
}

// CanTrack reports whether rdb's Hub can track (ErrTrackingUnsupported).
func CanTrack(rdb redis.UniversalClient) error {
	switch rdb.(type) {
	case *redis.ClusterClient, *redis.Client:
		return nil
	}
	return ErrTrackingUnsupported
}

// Track starts tracking prefix for hd. ctx bounds the first listing of the
// masters; a failure there is retried in the background. It returns nil
// once the Hub is closed.
func (h *Hub) Track(ctx context.Context, prefix string, hd TrackHandler, opt Options) (*Tracker, error) {
	if err := CanTrack(h.rdb); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, nil
	}
	t := &Tracker{h: h, prefix: prefix, hd: hd, opt: opt}
	h.track.trackers = append(h.track.trackers, t)
	if h.track.kick == nil {
		h.track.kick = make(chan struct{}, 1)
	}
	// Armed connections that do not cover prefix dial again.
	var stale []*conn
	for _, c := range h.conns {
		if c.track.duty && c.track.up && !covers(c.track.prefixes, prefix) {
			stale = append(stale, c)
		}
	}
	start := !h.track.looping
	h.track.looping = true
	h.mu.Unlock()
	for _, c := range stale {
		c.rearm()
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := h.syncMasters(ctx); err != nil {
		hd.Report(kind.Errorf("cacheguard: pubsub: listing the masters to track: %w", err))
	}
	if start {
		h.goLocked(h.trackLoop)
	}
	return t, nil
}

// Close stops the tracking.
func (t *Tracker) Close() {
	if t == nil {
		return
	}
	h := t.h
	h.mu.Lock()
	for i, x := range h.track.trackers {
		if x == t {
			h.track.trackers = append(h.track.trackers[:i], h.track.trackers[i+1:]...)
			break
		}
	}
	var idle []*conn
	if len(h.track.trackers) == 0 {
		for key, c := range h.conns {
			c.track.duty, c.track.up = false, false
			if len(c.chans) == 0 {
				delete(h.conns, key)
				idle = append(idle, c)
			}
		}
		h.track.masters = nil
	}
	h.mu.Unlock()
	for _, c := range idle {
		c.shut()
	}
	h.kickTrack() // the loop ends with the last Tracker
}

// trackLoop lists the masters when asked, and every health interval on a
// cluster, while the Hub has Trackers.
func (h *Hub) trackLoop() {
	_, cluster := h.rdb.(*redis.ClusterClient)
	for {
		h.mu.Lock()
		if h.closed || len(h.track.trackers) == 0 {
			h.track.looping = false
			h.mu.Unlock()
			return
		}
		every := h.trackInterval()
		kick := h.track.kick
		h.mu.Unlock()
		var tick <-chan time.Time
		var timer *time.Timer
		if cluster {
			timer = time.NewTimer(every)
			tick = timer.C
		}
		select {
		case <-h.bg.Done():
		case <-kick:
		case <-tick:
		}
		if timer != nil {
			timer.Stop()
		}
		if h.bg.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(h.bg, opTimeout)
		if err := h.syncMasters(ctx); err != nil {
			h.trackReport(kind.Errorf("cacheguard: pubsub: listing the masters to track: %w", err))
		}
		cancel()
	}
}

// trackInterval is the shortest health interval of the Trackers. h.mu held.
func (h *Hub) trackInterval() time.Duration {
	d := defaultHealth
	for _, t := range h.track.trackers {
		if t.opt.HealthInterval > 0 {
			d = min(d, t.opt.HealthInterval)
		}
	}
	return d
}

// kickTrack asks the loop to list the masters again.
func (h *Hub) kickTrack() {
	h.mu.Lock()
	kick := h.track.kick
	h.mu.Unlock()
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// syncMasters gives every master a connection with tracking duty, and takes
// the duty off the connections of nodes that are no longer masters.
func (h *Hub) syncMasters(ctx context.Context) error {
	masters, err := h.route.masters(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if h.closed || len(h.track.trackers) == 0 {
		h.mu.Unlock()
		return nil
	}
	var start, rearm, idle []*conn
	h.track.masters = map[string]bool{}
	for key, n := range masters {
		h.track.masters[key] = true
		c := h.conns[key]
		switch {
		case c == nil:
			c = newConn(h, key, n)
			c.track.duty = true
			h.conns[key] = c
			start = append(start, c)
		case !c.track.duty:
			c.track.duty = true
			rearm = append(rearm, c) // its session was dialled without tracking
		}
	}
	for key, c := range h.conns {
		if c.track.duty && !h.track.masters[key] {
			c.track.duty, c.track.up = false, false
			if len(c.chans) == 0 {
				delete(h.conns, key)
				idle = append(idle, c)
			}
		}
	}
	h.trackEval(errors.New("a master is not tracked yet"))
	for _, c := range start {
		h.goroutines.Go(c.run)
	}
	h.mu.Unlock()
	for _, c := range idle {
		c.shut()
	}
	for _, c := range rearm {
		c.rearm()
	}
	return nil
}

// rearm ends c's session so that the next one dials with tracking armed for
// the Hub's prefixes now.
func (c *conn) rearm() {
	c.h.goLocked(func() {
		c.opMu.Lock()
		defer c.opMu.Unlock()
		if c.ps != nil {
			_ = c.ps.Close()
		}
	})
}

// trackPrefixes returns the prefixes to arm: the Trackers', without those
// another covers (Redis refuses overlapping prefixes on one connection).
func (h *Hub) trackPrefixes() []string {
	h.mu.Lock()
	ps := make([]string, 0, len(h.track.trackers))
	for _, t := range h.track.trackers {
		ps = append(ps, t.prefix)
	}
	h.mu.Unlock()
	sort.Strings(ps) // a prefix sorts before what it covers
	out := ps[:0]
	for _, p := range ps {
		if !covers(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// covers reports whether one of armed is a prefix of p.
func covers(armed []string, p string) bool {
	for _, a := range armed {
		if strings.HasPrefix(p, a) {
			return true
		}
	}
	return false
}
