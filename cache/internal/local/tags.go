package local

import (
	"time"
)

// until: unix nanos

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
