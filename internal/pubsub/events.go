package pubsub

import (
	"context"
	"time"
)

// The events a session hands to the handlers, each under h.mu so that a
// handler hears them in order.

func (h *Hub) confirm(c *conn, name string, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chans[name]
	if ch == nil || ch.conn != c || ch.up {
		return
	}
	ch.up, ch.since = true, since
	for _, s := range ch.subs {
		s.hd.Up(name, since)
	}
}

func (h *Hub) healthy(c *conn, sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trackHealthy(c, sent)
	for name, ch := range c.chans {
		if ch.up && !ch.since.After(sent) {
			for _, s := range ch.subs {
				s.hd.Healthy(name, sent)
			}
		}
	}
}

func (h *Hub) deliver(c *conn, name, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch := h.chans[name]; ch != nil && ch.conn == c {
		for _, s := range ch.subs {
			s.hd.Message(name, payload)
		}
	}
}

// down tells every handler on c that its session ended.
func (h *Hub) down(c *conn, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trackDown(c, err)
	for name, ch := range c.chans {
		ch.up = false
		for _, s := range ch.subs {
			s.hd.Down(name, err)
		}
	}
}

// moved takes channel name off c after the server ended its subscription,
// and looks for its new node in the background.
func (h *Hub) moved(c *conn, name string, err error) {
	h.mu.Lock()
	ch := h.chans[name]
	if ch == nil || ch.conn != c {
		h.mu.Unlock()
		return
	}
	ch.up, ch.conn = false, nil
	delete(c.chans, name)
	for _, s := range ch.subs {
		s.hd.Down(name, err)
	}
	h.mu.Unlock()
	h.goLocked(func() { h.rehome(name, c) })
}

// rehome finds the node now serving channel name (unassigned) and assigns it
// there. from is the connection it left (nil for none): its node is taken
// only when no other turns up within opTimeout, as the cluster client learns
// of a slot's move lazily. from is shut if it carries nothing any more.
func (h *Hub) rehome(name string, from *conn) {
	defer h.shutIfEmpty(from)
	patience := time.Now().Add(opTimeout)
	retry := movedPoll
	for {
		h.mu.Lock()
		ch := h.chans[name]
		gone := h.closed || ch == nil || ch.conn != nil
		h.mu.Unlock()
		if gone {
			return
		}
		ctx, cancel := context.WithTimeout(h.bg, opTimeout)
		h.route.reload(ctx)
		key, n, err := h.route.nodeOf(ctx, name)
		cancel()
		if err == nil && (from == nil || key != from.key || time.Now().After(patience)) {
			h.assign(name, key, n)
			return
		}
		if err != nil {
			retry = min(2*retry, retryMax) // no node at all so far
		}
		t := time.NewTimer(retry)
		select {
		case <-h.bg.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// rehomeAll moves the channels of c whose node changed to their new node's
// connection. It reports false, having shut c, when c carries nothing.
func (h *Hub) rehomeAll(c *conn) bool {
	ctx, cancel := context.WithTimeout(h.bg, opTimeout)
	defer cancel()
	h.route.reload(ctx)
	h.mu.Lock()
	names := make([]string, 0, len(c.chans))
	for n := range c.chans {
		names = append(names, n)
	}
	h.mu.Unlock()
	for _, name := range names {
		key, n, err := h.route.nodeOf(ctx, name)
		if err != nil || key == c.key {
			continue
		}
		h.mu.Lock()
		ch := h.chans[name]
		ok := ch != nil && ch.conn == c
		if ok {
			delete(c.chans, name)
			ch.conn = nil
		}
		h.mu.Unlock()
		if ok {
			h.assign(name, key, n)
		}
	}
	return !h.shutIfEmpty(c)
}

// shutIfEmpty shuts c if it carries no channel, and reports whether it did.
func (h *Hub) shutIfEmpty(c *conn) bool {
	if c == nil {
		return false
	}
	h.mu.Lock()
	empty := len(c.chans) == 0 && !c.track.duty
	if empty && h.conns[c.key] == c {
		delete(h.conns, c.key)
	}
	h.mu.Unlock()
	if empty {
		c.shut()
	}
	return empty
}
