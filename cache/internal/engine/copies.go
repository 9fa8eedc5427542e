package engine

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Hot-key copies (cache.WithHotKeyCopies), on the read side. A read of a
// key the detector calls hot picks one of the key and its copies at random
// (transport.Copies), so that the reads of one hot key spread over several
// masters. A copy that is missing, holds no value or cannot be read sends
// the read on to the key itself, and the value found there, once decoded
// and past the tag check, is written to that copy (seedCopy): copies appear
// while the key is hot and stop being written when it cools. A copy lives
// at most its TTL and never past its entry's expiry, and every write of the
// key deletes them (package write): a copy is never served older than a
// completed write by more than its TTL.

// getRaw is the GET of read: of rkey, or of a copy picked for a hot key
// (fromCopy). seed names the copy to write once the value read from rkey
// proves good.
func (c *Engine[V]) getRaw(ctx context.Context, key, rkey string) (raw []byte, seed string, fromCopy bool, err error) {
	if c.Copies == nil || c.Hot == nil || !c.Hot.IsHot(key) {
		raw, err = c.Redis.Get(ctx, rkey)
		return raw, "", false, err
	}
	if seed = c.Copies.Pick(ctx, rkey); seed != "" {
		raw, err = c.Redis.Get(ctx, seed)
		if err == nil && entry.Classify(raw) != entry.Lease && !wire.IsTombstone(raw) {
			return raw, "", true, nil
		}
		if errs.IsCtx(errs.Caller(ctx, err)) {
			return nil, "", false, err
		}
	}
	raw, err = c.Redis.Get(ctx, rkey)
	return raw, seed, false, err
}

// seedCopy writes raw, the entry env just read from the key itself, to the
// copy ckey, bounded by ctx and by seedBound, so that a slow or frozen
// master of the copy holds the read for little longer than its own round
// trip. An entry marked stale or under a refresh is not copied: its reload
// is the key's. A failure is reported, and the next read of the copy reads
// the key again.
func (c *Engine[V]) seedCopy(ctx context.Context, key, ckey string, raw []byte, env wire.Envelope) {
	if env.Flags&(wire.FlagStale|wire.FlagRefreshing) != 0 {
		return
	}
	ttl := c.Copies.TTL
	if !env.Expiry.IsZero() {
		ttl = min(ttl, time.Until(env.Expiry))
	}
	if ttl < time.Millisecond {
		return
	}
	err := call.Err(c.Redis.Calls().Strict(), ctx, seedBound, func(ctx context.Context) error {
		return c.Copies.Seed(ctx, c.Redis, ckey, raw, ttl)
	})
	switch {
	case err == nil:
		c.Rec.CopySeeds.Add(1)
	case kind.Ended(ctx) == nil: // not the caller's own end
		c.Rec.Report(telemetry.CopyFailed, key, c.Redis.Error(key, "copy", err))
	}
}

// seedBound bounds the write of a copy.
const seedBound = 250 * time.Millisecond
