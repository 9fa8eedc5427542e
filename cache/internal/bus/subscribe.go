package bus

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The subscriber. The invalidation channel is one subscription of the
// client's shared pub/sub connections (internal/pubsub), which run sessions:
// a new connection to the node serving the channel (its master on a cluster,
// the master the Sentinels name under Sentinel), subscribed, checked by a
// PING every health interval, until anything goes wrong; then the listener
// hears Down, and the next session dials the node serving the channel then.
// A session is trusted only on the channel's master (writers publish there,
// and a PING answered by another node proves nothing about what the master
// published): on a cluster and under Sentinel it asks its node ROLE when the
// subscription is confirmed and after every health PING, and under Sentinel
// also which node the Sentinels name master now, so that a planned failover,
// after which the demoted master goes on answering PINGs (and ROLE, as a
// master, for seconds), ends the session instead of leaving the tier
// trusting a node nobody publishes on.

// Listener hears the subscription's events, one at a time.
type Listener interface {
	// Up: the subscription is (back) up; everything published after it was
	// asked for arrives from now on, and this vouches for what arrived
	// until trustUntil. again: it was up before (a message may have been
	// lost in the gap).
	Up(trustUntil time.Time, again bool)
	// Healthy: a health reply vouches for every message until trustUntil.
	Healthy(trustUntil time.Time)
	// Down: the subscription is lost until the next Up (counted and
	// reported already).
	Down(err error)
	// Lost: messages were lost, or one did not decode; their keys are
	// unknown.
	Lost()
	// Message is another instance's message.
	Message(m wire.Invalidation)
}

// maxTrackedSources bounds the per-publisher sequence table; past it the
// table starts over (forgetting a source only skips one gap check).
const maxTrackedSources = 4096

// Subscribe subscribes the invalidation channel on the client's shared
// connection; l hears what happens on it until Close.
func (b *Bus) Subscribe(l Listener) {
	opt := pubsub.Options{HealthInterval: b.cfg.HealthInterval, HealthTimeout: b.cfg.HealthTimeout}
	if h := b.hooks; h != nil && (h.BeforeRole != nil || h.OnNotMaster != nil) {
		opt.Hooks = &pubsub.Hooks{BeforeRole: h.BeforeRole, NotMaster: h.OnNotMaster}
	}
	b.sub = b.hub.Subscribe(b.life.Closing(), b.cfg.Channel, &handler{b: b, l: l, seqs: map[[wire.SourceIDSize]byte]uint64{}}, opt)
}

// handler maps the session's events onto the Listener. The shared
// connection calls it one event at a time.
type handler struct {
	b *Bus
	l Listener
	// seqs holds the last sequence number seen from each publisher in
	// this session.
	seqs map[[wire.SourceIDSize]byte]uint64
}

func (h *handler) trust() time.Duration { return h.b.cfg.HealthInterval + h.b.cfg.HealthTimeout }

func (h *handler) Up(_ string, since time.Time) {
	// Everything published after the SUBSCRIBE was sent arrives from here
	// on; what came before is flushed.
	clear(h.seqs)
	again := false
	select {
	case <-h.b.subscribed:
		again = true
	default:
	}
	h.l.Up(since.Add(h.trust()), again)
	if hk := h.b.hooks; hk != nil && hk.OnSubscribed != nil {
		hk.OnSubscribed()
	}
	if !again {
		close(h.b.subscribed)
	}
}

func (h *handler) Healthy(_ string, sent time.Time) {
	// A reply to a PING sent at sent: every message published before then
	// has been applied.
	h.l.Healthy(sent.Add(h.trust()))
}

func (h *handler) Down(_ string, err error) {
	b := h.b
	b.Downs.Add(1)
	if pubsub.Refused(err) {
		b.Refused.Add(1)
		b.rec.Report(telemetry.Subscription, "", kind.Errorf("%w, local tier off until it is granted (the user needs %s; see docs/acl.md): %w",
			errs.ErrSubscriptionRefused, b.channelGrants(), err))
	} else {
		b.rec.Report(telemetry.Subscription, "", kind.Errorf("cacheguard: cache: invalidation subscription down, local tier off until it is back: %w", err))
	}
	h.l.Down(err)
}

func (h *handler) Report(err error) { h.b.rec.Report(telemetry.Subscription, "", err) }

// channelGrants names the channel permissions the cache's subscriptions
// need: its invalidation channel and its fill channels (docs/acl.md). A
// refusal may also come from another channel on the same connection (a lock
// client's, on the same go-redis client).
func (b *Bus) channelGrants() string {
	fills := "&" + wire.FillChannelPrefix + b.cfg.Prefix + "* and +subscribe"
	if b.redis.Sharded() {
		fills = "&" + b.cfg.Prefix + "* and +ssubscribe"
	}
	return "&" + b.cfg.Channel + " " + fills
}

// Message applies one message.
func (h *handler) Message(_, payload string) {
	b := h.b
	m, err := wire.DecodeInvalidation([]byte(payload))
	if err != nil {
		b.DecodeErrors.Add(1)
		h.l.Lost()
		b.rec.Report(telemetry.InvalidationBad, "", kind.Errorf("cacheguard: cache: invalidation on %s (local tier cleared): %w", b.cfg.Channel, err))
		return
	}
	if m.Source == b.source {
		return // applied locally when written
	}
	b.Received.Add(1)
	if lag := time.Duration(time.Now().UnixNano() - m.Sent); m.Sent > 0 && lag >= 0 {
		b.observeLag(lag)
	}
	last, known := h.seqs[m.Source]
	if known && m.Seq > last+1 {
		// Messages from this publisher were lost in between; their keys are
		// unknown, so nothing in the tier can be vouched for.
		b.Gaps.Add(1)
		b.Lost.Add(m.Seq - last - 1)
		h.l.Lost()
	}
	if !known || m.Seq > last {
		if !known && len(h.seqs) >= maxTrackedSources {
			clear(h.seqs)
		}
		h.seqs[m.Source] = m.Seq
	}
	h.l.Message(m)
	if hk := b.hooks; hk != nil && hk.OnInvalidate != nil {
		hk.OnInvalidate(m.Keys)
	}
}
