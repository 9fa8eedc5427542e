package stock

import (
	"sync"
	"time"
)

// strikes tells an entry the sink refuses from a sink that refuses
// everything (a database outage), by the sink's own answers, not by how
// often Redis delivered the entry (crashes and claims redeliver too).
//
// A failure of an entry counts against it (a strike) only when the sink has
// accepted another entry since this entry first failed, and no entry has
// failed for the first time since that success. The first failure of an
// entry never counts: when the database goes away, the entries in flight
// each fail once, and the new entries that keep arriving fail for the first
// time, so none of them can collect a strike until the sink accepts
// something again. An entry that keeps failing while the sink accepts the
// others collects one strike per failure, retried every pass or every
// ClaimIdle, and is dead-lettered at MaxDeliveries strikes.
//
// The record is this consumer's: an entry claimed by another consumer starts
// afresh there, which can only delay a dead letter, never cause one.
type strikes struct {
	mu sync.Mutex
	// seq orders the sink's answers; okAt and freshFailAt are the seq of the
	// last success and of the last first failure.
	seq, okAt, freshFailAt uint64
	entries                map[string]*strikeRecord // stream + "/" + id
}

type strikeRecord struct {
	firstFail uint64
	strikes   int64
	seen      time.Time
}

func strikeKey(stream, id string) string { return stream + "/" + id }

// ok records that the sink applied the entry.
func (s *strikes) ok(stream, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.okAt = s.seq
	delete(s.entries, strikeKey(stream, id))
}

// fail records that the sink refused the entry and returns its strikes.
func (s *strikes) fail(stream, id string, now time.Time) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	k := strikeKey(stream, id)
	r := s.entries[k]
	if r == nil {
		if s.entries == nil {
			s.entries = map[string]*strikeRecord{}
		}
		r = &strikeRecord{firstFail: s.seq}
		s.entries[k] = r
		s.freshFailAt = s.seq
	} else if s.okAt > r.firstFail && s.okAt > s.freshFailAt {
		r.strikes++
	}
	r.seen = now
	return r.strikes
}

// forget drops the record of an entry that was dead-lettered.
func (s *strikes) forget(stream, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, strikeKey(stream, id))
}

// prune drops the records of entries not seen since before; they were
// acknowledged or claimed elsewhere.
func (s *strikes) prune(before time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, r := range s.entries {
		if r.seen.Before(before) {
			delete(s.entries, k)
		}
	}
}
