package cache

import (
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// tagStamp is what a tagged entry records (its envelope's tag section, kept
// by the local tier too): its tags, when its load started (Unix ms), and per
// tag the tag's time its loader had read before the load (seen; nil: none).
type tagStamp struct {
	tags    []string
	created int64
	seen    []int64
}

func stampOf(info wire.TagInfo) *tagStamp {
	return &tagStamp{tags: info.Tags, created: info.Created.UnixMilli(), seen: info.Seen}
}

// newStamp is the stamp of a fill of a value with tags (none: nil) whose
// load started at created, after the tags' times in seen were read.
func newStamp(tags []string, created time.Time, seen map[string]int64) *tagStamp {
	if len(tags) == 0 {
		return nil
	}
	st := &tagStamp{tags: tags, created: created.UnixMilli()}
	for i, tag := range tags {
		if ms := seen[tag]; ms > 0 {
			if st.seen == nil {
				st.seen = make([]int64, len(tags))
			}
			st.seen[i] = ms
		}
	}
	return st
}

// seenTimes returns the seen times to write (nil: none).
func (s *tagStamp) seenTimes() []int64 {
	if s == nil {
		return nil
	}
	return s.seen
}

// seenOf returns the time of tags[i] the entry's loader read (0: none).
func (s *tagStamp) seenOf(i int) int64 {
	if s.seen == nil {
		return 0
	}
	return s.seen[i]
}

// invalidBy is the rule every check of a tagged entry applies (a Redis hit,
// a batch's hits, the fill path's, a local hit): is the entry invalidated
// by its tag tags[i], whose time is inv (0: never invalidated)? A tag's
// time grows with every invalidation, so where the loader read the tag's
// time, the entry is invalid exactly when the time is later now: no clock
// involved. Where it read none, or read a later one than inv (Redis forgot
// the tag's time and a new invalidation set it again), the clock rule:
// created ≤ inv + tagClockMargin.
func (s *tagStamp) invalidBy(i int, inv int64) bool {
	if inv == 0 {
		return false
	}
	if seen := s.seenOf(i); seen > 0 && inv >= seen {
		return inv > seen
	}
	return s.created <= inv+tagClockMargin.Milliseconds()
}
