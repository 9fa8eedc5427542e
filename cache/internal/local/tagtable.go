package local

import "sync"

// maxTagTimes bounds the times an instance keeps; past it they start over.
const maxTagTimes = 1 << 16

// tagTable holds the tag times an instance with a local tier read or heard,
// for one subscription epoch, each for the local TTL.
type tagTable struct {
	mu    sync.RWMutex
	epoch uint64
	times map[string]tagTime
}

type tagTime struct{ ms, until int64 }

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
