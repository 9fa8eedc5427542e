package local

import (
	"sync"
	"time"
)

// maxTagTimes bounds the times an instance keeps; past it they start over.
const maxTagTimes = 1 << 16

// tagTable holds the tag times an instance with a local tier read or heard,
// for one subscription epoch, each for the local TTL.
type tagTable struct {
	mu    sync.RWMutex
	epoch uint64
	times map[string]tagTime
}

type tagTime struct{ ms, until int64 } // until: unix nanos

func (t *tagTable) get(tag string, epoch uint64, now int64) (int64, bool) {
	ms, fresh := t.lookup(tag, epoch, now)
	return ms, fresh
}

// lookup returns tag's time known in epoch (0: none) and whether it is still
// to be trusted as the latest. A time past its trust still invalidates what
// it invalidated: a tag's time only grows.
func (t *tagTable) lookup(tag string, epoch uint64, now int64) (ms int64, fresh bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tt, ok := t.times[tag]
	if !ok || t.epoch != epoch {
		return 0, false
	}
	if now >= tt.until {
		return tt.ms, false
	}
	return tt.ms, true
}

// put records times of tags known in epoch; a time never goes back.
func (t *tagTable) put(tags []string, ms []int64, epoch uint64, until int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.epoch != epoch {
		if epoch < t.epoch {
			return
		}
		t.epoch, t.times = epoch, nil
	}
	if t.times == nil || len(t.times)+len(tags) > maxTagTimes {
		t.times = make(map[string]tagTime, len(tags))
	}
	for i, tag := range tags {
		m := ms[i]
		if old, ok := t.times[tag]; ok && old.ms > m {
			m = old.ms
		}
		t.times[tag] = tagTime{ms: m, until: until}
	}
}

// TagTrust returns the epoch whose tag times may be used now, and false
// when none may (no tier, or it is not trusted).
func (t *Tier[V]) TagTrust(now int64) (uint64, bool) {
	if t == nil {
		return 0, false
	}
	e := t.epoch.Load()
	return e, e%2 == 0 && now < t.trustUntil.Load()
}

// TagTime returns the time of tag known in epoch, if it is to be trusted as
// the latest.
func (t *Tier[V]) TagTime(tag string, epoch uint64, now int64) (int64, bool) {
	if t == nil {
		return 0, false
	}
	return t.tagTimes.get(tag, epoch, now)
}

// LearnTags records tag times read from Redis or heard from another
// instance, known in epoch.
func (t *Tier[V]) LearnTags(tags []string, ms []int64, epoch uint64) {
	if t == nil || epoch != t.epoch.Load() {
		return
	}
	t.tagTimes.put(tags, ms, epoch, time.Now().Add(t.cfg.TTL).UnixNano())
}

// ApplyTags records that tags were invalidated at ms (this instance's own
// invalidation, or another's heard on the channel): the tier's entries
// carrying them are misses from now on, and reads that started before see
// the clock moved and do not admit what they fetched.
func (t *Tier[V]) ApplyTags(tags []string, ms int64) {
	if t == nil {
		return
	}
	t.invalSeq.Add(1)
	times := make([]int64, len(tags))
	for i := range times {
		times[i] = ms
	}
	t.LearnTags(tags, times, t.epoch.Load())
}

// tagsValid checks a local entry's tags against the times this
// instance knows; unknown means not valid (the read goes to Redis), and so
// does a time older than the one the entry's loader read (this instance
// has not heard of it yet). servable is false when a tag is known to have
// invalidated the entry.
func (t *Tier[V]) tagsValid(e *Entry[V], now int64) (valid, servable bool) {
	epoch, ok := t.TagTrust(now)
	valid = ok
	st := e.tagged
	for i, tag := range st.Tags {
		ms, known := t.tagTimes.lookup(tag, epoch, now)
		if ms < st.SeenOf(i) {
			valid = false
			continue
		}
		if st.InvalidBy(i, ms) { // known or not: a time only grows
			return false, false
		}
		valid = valid && known
	}
	return valid, true
}
