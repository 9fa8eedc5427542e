package local

// Get returns the entry for key if it may be served as fresh, and the
// entry itself (possibly stale) for the Redis-failure fallback.
func (t *Tier[V]) Get(key string) (fresh bool, e *Entry[V]) {
	now := t.clock.read()
	var ok bool
	if t.otter != nil {
		e, ok = t.otter.Get(key)
	} else {
		e, ok = t.store.Get(key)
	}
	if !ok {
		return false, nil
	}
	fresh = now < e.fresh && now < t.trustUntil.Load() && e.epoch == t.epoch.Load()
	if e.tagged != nil {
		valid, servable := t.tagsValid(e, now)
		if !servable {
			return false, nil
		}
		fresh = fresh && valid
	}
	return fresh, e
}

// ServableStale reports whether e, an entry past its freshness, may answer
// a Get that Redis (or a rate limit) cannot: it is within the stale bound
// and was admitted since the tier was last cleared.
func (t *Tier[V]) ServableStale(e *Entry[V]) bool {
	return e != nil && t.clock.now.Load() < e.stale && e.epoch >= t.floor.Load()
}
