package local

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
)

// Ordering admissions against invalidations. A read admits what it fetched
// only if no invalidation arrived since it started (Clock). Checking the
// clock and storing the entry are two steps, so an invalidation could fall
// between them: its Del would find nothing, the write would return, and the
// entry stored just after would be served to callers that began after the
// write. admitLocks closes that gap: Admit checks the clock and stores under
// the key's stripe lock, and an invalidation bumps the clock first and then
// deletes under the same lock. Either the admission comes first and the Del
// removes it (LocalStore's Del removes whatever was Set before it), or the
// invalidation comes first and the admission sees the new clock.
//
// Clears (a lost message, a resubscription) do not take the locks: they
// change the epoch, and entries of another epoch are never served as fresh;
// entries of an epoch before the last clear (floor) are not served
// even stale, while Redis fails.

// Drop removes keys from the tier after a write or an invalidation of
// them, once the clock has moved on.
func (t *Tier[V]) Drop(keys []string) {
	t.invalSeq.Add(1)
	for _, k := range keys {
		mu := t.locks.of(k)
		mu.Lock()
		t.store.Del(k)
		mu.Unlock()
	}
}

// Admit puts a value that just came from Redis or a load into the tier,
// if the key qualifies, the subscription is up and nothing invalidated
// anything since before was read (the clock taken before going to Redis).
func (t *Tier[V]) Admit(key string, r entry.Result[V], size int, before Clock) {
	if t == nil || r.NoLocal || before.epoch%2 == 1 || before != t.Clock() {
		return // subscription down, or an invalidation arrived since the read
	}
	epoch := before.epoch
	if !t.cfg.AdmitAll && !t.cfg.Hot.IsHot(key) {
		return
	}
	now := time.Now()
	ttl := entry.Jittered(t.cfg.TTL, t.cfg.Jitter)
	e := &Entry[V]{Value: r.V, Null: r.Null, epoch: epoch,
		fresh: now.Add(ttl).UnixNano(), stale: now.Add(ttl + t.cfg.Stale).UnixNano()}
	e.tagged = r.Tagged
	// Checked again and stored under the key's lock: an invalidation
	// either sees the entry and deletes it, or made this check fail
	// (above).
	mu := t.locks.of(key)
	mu.Lock()
	defer mu.Unlock()
	if t.Clock() != before {
		return
	}
	if t.hooks != nil && t.hooks.BeforeLocalSet != nil {
		t.hooks.BeforeLocalSet(key)
	}
	t.store.Set(key, e, int64(size+len(key)+64), ttl+t.cfg.Stale)
}

// Clock is read before going to Redis and compared before admitting what
// came back: if the subscription went down or any invalidation arrived in
// between, the value may already be stale and is not admitted.
type Clock struct{ epoch, seq uint64 }

// Clock is the tier's clock now (zero without a tier).
func (t *Tier[V]) Clock() Clock {
	if t == nil {
		return Clock{}
	}
	return Clock{t.epoch.Load(), t.invalSeq.Load()}
}
