package pubsub

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// The tracking events of a session, each under h.mu like the channels'.

// errRearm ends a session armed for fewer prefixes than the Hub tracks now.
var errRearm = errors.New("tracking prefixes changed: dialling again to arm them")

// trackConfirm records that the session of ps has subscribed the tracking
// channel, armed as its dial's OnConnect left it. It returns errRearm when
// the arming misses a Tracker's prefix: the session must end.
func (h *Hub) trackConfirm(c *conn, ps *redis.PubSub, sent time.Time) error {
	a := c.armed()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !c.track.duty {
		return nil
	}
	if a.err != nil {
		for _, t := range h.track.trackers {
			t.hd.Report(kind.Errorf("cacheguard: pubsub: tracking not armed on %s: %w", c.name(), a.err))
		}
		return nil
	}
	for _, t := range h.track.trackers {
		if !covers(a.prefixes, t.prefix) {
			return errRearm
		}
	}
	c.track.up, c.track.since, c.track.proof = true, sent, sent
	c.track.prefixes, c.track.ps = a.prefixes, ps
	h.trackEval(nil)
	return nil
}

// trackHealthy: a health PING sent at sent was answered on c.
func (h *Hub) trackHealthy(c *conn, sent time.Time) {
	if c.track.up && !c.track.since.After(sent) {
		c.track.proof = sent
		h.trackEval(nil)
	}
}

// trackDown: c's session ended. h.mu held.
func (h *Hub) trackDown(c *conn, err error) {
	if c.track.up {
		c.track.up, c.track.ps = false, nil
		h.trackEval(fmt.Errorf("tracking connection to %s lost: %w", c.name(), err))
	}
}

// trackDeliver hands the keys of an invalidation on c (nil: a flush) to
// every Tracker.
func (h *Hub) trackDeliver(c *conn, keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !c.track.duty {
		return
	}
	for _, t := range h.track.trackers {
		t.hd.Invalidate(keys)
	}
}

func (h *Hub) trackReport(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.track.trackers {
		t.hd.Report(err)
	}
}

// trackEval brings every Tracker's state in line with its masters'
// connections: Up when every one is armed for its prefix, Healthy as of the
// oldest proof among them, Down (with err, or a generic reason) otherwise.
// h.mu held.
func (h *Hub) trackEval(err error) {
	for _, t := range h.track.trackers {
		ok, proof := h.trackedFor(t)
		switch {
		case ok && !t.up:
			t.up, t.proof = true, proof
			t.hd.Up(proof)
		case ok && proof.After(t.proof):
			t.proof = proof
			t.hd.Healthy(proof)
		case !ok && t.up:
			t.up = false
			if err == nil {
				err = errors.New("a master's tracking is not armed")
			}
			t.hd.Down(err)
		}
	}
}

// trackedFor reports whether every master's connection is armed for t, with
// the oldest of their proofs. h.mu held.
func (h *Hub) trackedFor(t *Tracker) (ok bool, proof time.Time) {
	if len(h.track.masters) == 0 {
		return false, proof
	}
	first := true
	for key := range h.track.masters {
		c := h.conns[key]
		if c == nil || !c.track.duty || !c.track.up || !covers(c.track.prefixes, t.prefix) {
			return false, proof
		}
		if first || c.track.proof.Before(proof) {
			proof, first = c.track.proof, false
		}
	}
	return true, proof
}

// flushPayload tells go-redis's error for an invalidation with a nil payload
// (Redis's message for a flush), which it does not parse, from others.
func flushPayload(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unsupported pubsub message payload: <nil>")
}

func (c *conn) name() string {
	if c.key == "" {
		return "the master"
	}
	return c.key
}
