package cache

import "sync"

// Ordering admissions against invalidations. A read admits what it fetched
// only if no invalidation arrived since it started (localClock). Checking the
// clock and storing the entry are two steps, so an invalidation could fall
// between them: its Del would find nothing, the write would return, and the
// entry stored just after would be served to callers that began after the
// write. admitLocks closes that gap: admit checks the clock and stores under
// the key's stripe lock, and an invalidation bumps the clock first and then
// deletes under the same lock. Either the admission comes first and the Del
// removes it (LocalStore's Del removes whatever was Set before it), or the
// invalidation comes first and the admission sees the new clock.
//
// Clears (a lost message, a resubscription) do not take the locks: they
// change the epoch, and entries of another epoch are never served as fresh;
// entries of an epoch before the last clear (localFloor) are not served
// even stale, while Redis fails.

// admitLocks is a small set of mutexes striped by key.
type admitLocks struct {
	stripes [admitStripes]struct {
		sync.Mutex
		_ [56]byte // one stripe per cache line
	}
}

const admitStripes = 64

func (l *admitLocks) of(key string) *sync.Mutex {
	return &l.stripes[fnv1a(key)%admitStripes].Mutex
}

// dropLocal removes keys from the local tier after a write or an
// invalidation of them, once the clock has moved on.
func (c *Cache[V]) dropLocal(keys []string) {
	c.invalSeq.Add(1)
	for _, k := range keys {
		mu := c.admitLocks.of(k)
		mu.Lock()
		c.local.Del(k)
		mu.Unlock()
	}
}
