package local

import "sync"

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

// admitLocks is a small set of mutexes striped by key.
type admitLocks struct {
	stripes [admitStripes]struct {
		sync.Mutex
		_ [56]byte // one stripe per cache line
	}
}

const admitStripes = 64

func (l *admitLocks) of(key string) *sync.Mutex {
	return &l.stripes[Hash(key)%admitStripes].Mutex
}

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

// Hash hashes s (FNV-1a, 32 bits) to spread keys over lock stripes.
func Hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
