package hotkey

import (
	"math"
	"sync"
	"time"
)

// Early promotion. A tick recomputes the hot set from all shards, but a key
// should not wait for it: at 100 ms a tick, a key that turns hot is read from
// Redis up to a tick longer than it needs to be. So a candidate is promoted
// the moment its count reaches the threshold, by the Record that makes it
// cross: the key joins its shard's early set, which IsHot consults after the
// snapshot. The next tick takes the early sets over: a key that is still hot
// by the tick's ranking stays hot through the snapshot, and one that is not
// (it lost its place among the k hottest, or its share of a larger total) is
// dropped, with the events saying so.
//
// The threshold used between ticks is the minimum count, and the minimum share
// of the total of the last tick's window (the current total is only known at a
// tick). Early promotions only fill the room the last tick left under k, so
// the hot set never holds more than k keys, apart from keys promoted while a
// tick is running, which the next tick ranks with the others.

// earlySet holds a shard's keys promoted since its last tick, each with the
// clock's time of its promotion.
type earlySet struct{ keys sync.Map } // string -> time.Time

func (e *earlySet) has(key string) bool {
	if e == nil {
		return false
	}
	_, ok := e.keys.Load(key)
	return ok
}

// earlyThreshold returns the window count (in sampled units) at which a
// candidate is promoted between ticks, given the last window's total.
func (d *Detector) earlyThreshold(total uint64) uint64 {
	if d.cfg.minShare > 0 && !d.ticked {
		return math.MaxUint64 // no total yet to take a share of
	}
	s := uint64(d.cfg.sampling)
	thr := (d.cfg.minCount + s - 1) / s
	if d.cfg.minShare > 0 {
		thr = max(thr, uint64(math.Ceil(d.cfg.minShare*float64(total))))
	}
	return max(thr, 1)
}

// promoteEarly makes key hot before the next tick, if it is not already and
// there is room. It runs with the key's shard locked (so that the tick, which
// takes the shard's early set under the same lock, sees every key added
// before it, and no key is added to a set it took).
func (d *Detector) promoteEarly(s *shard, key string) {
	snap := d.hot.Load()
	if _, ok := snap.byKey[key]; ok {
		return
	}
	if int64(snap.local)+snap.early.Load() >= int64(d.cfg.k) {
		return
	}
	set := s.early.Load()
	if set == nil {
		set = new(earlySet)
		d.earlySetN.Add(1) // before the set can be seen: see earlyHot
		s.early.Store(set)
	}
	if _, loaded := set.keys.LoadOrStore(key, d.cfg.now()); !loaded {
		snap.early.Add(1)
	}
}

// earlyHot reports whether key was promoted early and not yet taken over by a
// tick. It runs after snap, the snapshot, said no. The order of the loads
// matters: a tick moves a shard's set from early to early-old, then publishes
// the snapshot, then clears early-old; read in the opposite order, a key the
// tick is taking over is always found in one of the three.
//
// Most calls are for cold keys while no key waits for a tick: then no early
// set exists (the count is raised before a set is stored and lowered after it
// is cleared), and if the snapshot is still snap, no key became hot through a
// set in between either, so the answer is no without hashing the key.
func (d *Detector) earlyHot(key string, snap *snapshot) bool {
	if d.earlySetN.Load() == 0 && d.hot.Load() == snap {
		return false
	}
	s := &d.shards[d.shardOf(key)]
	if s.early.Load().has(key) || s.earlyOld.Load().has(key) {
		return true
	}
	_, ok := d.hot.Load().byKey[key]
	return ok
}

// takeEarly moves a shard's early set aside for the tick, which ranks its
// keys with the others. The caller holds the shard's lock.
func (s *shard) takeEarly() *earlySet {
	set := s.early.Load()
	s.earlyOld.Store(set)
	s.early.Store(nil)
	return set
}

// earlyTimes collects the early sets a tick took: key -> promotion time.
func earlyTimes(sets []*earlySet, into map[string]time.Time) {
	for _, set := range sets {
		if set == nil {
			continue
		}
		set.keys.Range(func(k, v any) bool {
			into[k.(string)] = v.(time.Time)
			return true
		})
	}
}
