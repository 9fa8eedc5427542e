package entry

import (
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Encode turns v into the bytes to cache: a codec error is wrapped, and a
// payload over the size limit is an error wrapping ErrValueTooLarge.
func (f *Format[V]) Encode(key string, v V) ([]byte, error) {
	payload, err := f.codec.encode(v)
	if err != nil {
		return nil, kind.Errorf("cacheguard: cache: encode %q: %w", key, err)
	}
	if f.cfg.MaxValueSize > 0 && len(payload) > f.cfg.MaxValueSize {
		return nil, fmt.Errorf("%w: %q encodes to %d bytes, limit %d", errs.ErrValueTooLarge, key, len(payload), f.cfg.MaxValueSize)
	}
	return payload, nil
}

// EncodeTagged is Encode with v's tags.
func (f *Format[V]) EncodeTagged(key string, v V) ([]byte, []string, error) {
	payload, err := f.Encode(key, v)
	if err != nil {
		return nil, nil, err
	}
	tags, err := f.tagsOf(key, v)
	if err != nil {
		return nil, nil, err
	}
	return payload, tags, nil
}

// Uncacheable reports an encode error for a value that is served but not
// cached, counting the size limit's refusals.
func (f *Format[V]) Uncacheable(key string, err error) {
	if errors.Is(err, errs.ErrValueTooLarge) {
		f.rec.TooLarge.Add(1)
	}
	f.rec.Report(telemetry.Uncacheable, key, err)
}

// Entry builds the envelope for payload (or for an absence, null) with its
// jittered TTL: the value TTL, or the null TTL for an absence, floored as
// every expiry written to Redis is (RedisTTL).
func (f *Format[V]) Entry(null bool, version uint64, delta time.Duration, payload []byte) ([]byte, time.Duration) {
	return f.TaggedEntry(null, version, delta, payload, f.cfg.TTL, nil, time.Time{}, nil)
}

// TaggedEntry is Entry with base, before jitter, as the value TTL
// (ValueTTL), carrying tags (none: an untagged envelope), the time the
// entry's load started and the tags' times its loader had read before
// (seen: nil, or one per tag; stamp.go).
func (f *Format[V]) TaggedEntry(null bool, version uint64, delta time.Duration, payload []byte, base time.Duration, tags []string, created time.Time, seen []int64) ([]byte, time.Duration) {
	if len(tags) > 0 && base > f.cfg.TTL {
		// A tag's time is kept for about 2·WithTTL (cache.Values.Tags): a tagged
		// entry must not outlive it, whatever the TTL function chose.
		base = f.cfg.TTL
	}
	ttl, flags := Jittered(base, f.cfg.Jitter), byte(0)
	if null {
		ttl, flags = Jittered(f.cfg.NullTTL, f.cfg.Jitter), wire.FlagNull
	}
	ttl = RedisTTL(ttl) // the envelope's expiry is the one Redis keeps
	payload, flags = f.compress(payload, flags)
	if len(tags) == 0 {
		f.rec.Size("write", wire.HeaderSize+len(payload))
		return wire.AppendEnvelope(make([]byte, 0, wire.HeaderSize+len(payload)), flags, version, f.Now().Add(ttl), delta, payload), ttl
	}
	n := wire.HeaderSize + wire.TagSectionSize(tags, seen) + len(payload)
	f.rec.Size("write", n)
	return wire.AppendTaggedEnvelope(make([]byte, 0, n), flags, version, f.Now().Add(ttl), delta, created, tags, seen, payload), ttl
}

// tagsOf returns v's tags, checked against the limits; a panic of the tag
// function is an error.
func (f *Format[V]) tagsOf(key string, v V) (tags []string, err error) {
	if f.cfg.Tags == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			tags, err = nil, fmt.Errorf("%w: tag function for %q panicked: %v", errs.ErrInvalidArgument, key, p)
		}
	}()
	tags = f.cfg.Tags(key, v)
	if err := wire.CheckTags(tags); err != nil {
		return nil, kind.Errorf("%w: tags of %q: %w", errs.ErrInvalidArgument, key, err)
	}
	return tags, nil
}
