package cache

import (
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// The bytes a write stores: the value encoded, then wrapped in an envelope
// with its jittered TTL (and its tags, if any).

// encode turns v into the bytes to cache: a codec error is wrapped, and a
// payload over the size limit is an error wrapping ErrValueTooLarge.
func (c *Cache[V]) encode(key string, v V) ([]byte, error) {
	payload, err := c.codec.encode(v)
	if err != nil {
		return nil, fmt.Errorf("cacheguard: cache: encode %q: %w", key, err)
	}
	if c.cfg.maxValueSize > 0 && len(payload) > c.cfg.maxValueSize {
		return nil, fmt.Errorf("%w: %q encodes to %d bytes, limit %d", ErrValueTooLarge, key, len(payload), c.cfg.maxValueSize)
	}
	return payload, nil
}

// uncacheable reports an encode error for a value that is served but not
// cached, counting the size limit's refusals.
func (c *Cache[V]) uncacheable(key string, err error) {
	if errors.Is(err, ErrValueTooLarge) {
		c.stats.tooLarge.Add(1)
	}
	c.report(logUncacheable, key, err)
}

// entry builds the envelope for payload (or for an absence, null) with its
// jittered TTL: the value TTL, or the null TTL for an absence, floored as
// every expiry written to Redis is (redisTTL).
func (c *Cache[V]) entry(null bool, version uint64, delta time.Duration, payload []byte) ([]byte, time.Duration) {
	return c.taggedEntry(null, version, delta, payload, c.cfg.ttl, nil, time.Time{}, nil)
}

// taggedEntry is entry with base, before jitter, as the value TTL
// (ttlfunc.go), carrying tags (none: an untagged envelope), the time the
// entry's load started and the tags' times its loader had read before (seen:
// nil, or one per tag; tags.go).
func (c *Cache[V]) taggedEntry(null bool, version uint64, delta time.Duration, payload []byte, base time.Duration, tags []string, created time.Time, seen []int64) ([]byte, time.Duration) {
	if len(tags) > 0 && base > c.cfg.ttl {
		// A tag's time is kept for about 2·WithTTL (tags.go): a tagged
		// entry must not outlive it, whatever WithTTLFunc chose.
		base = c.cfg.ttl
	}
	ttl, flags := jittered(base, c.cfg.jitter), byte(0)
	if null {
		ttl, flags = jittered(c.cfg.nullTTL, c.cfg.jitter), wire.FlagNull
	}
	ttl = redisTTL(ttl) // the envelope's expiry is the one Redis keeps
	payload, flags = c.compress(payload, flags)
	if len(tags) == 0 {
		c.observedSize("write", wire.HeaderSize+len(payload))
		return wire.AppendEnvelope(make([]byte, 0, wire.HeaderSize+len(payload)), flags, version, c.now().Add(ttl), delta, payload), ttl
	}
	n := wire.HeaderSize + wire.TagSectionSize(tags, seen) + len(payload)
	c.observedSize("write", n)
	return wire.AppendTaggedEnvelope(make([]byte, 0, n), flags, version, c.now().Add(ttl), delta, created, tags, seen, payload), ttl
}

func (c *Cache[V]) now() time.Time {
	if c.hooks != nil && c.hooks.now != nil {
		return c.hooks.now()
	}
	return time.Now()
}
