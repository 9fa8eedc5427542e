package entry

import (
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// TagClockMargin is how far apart the instances' wall clocks may be: an
// entry whose loader read no tag time is invalidated by a tag invalidated
// up to this long after the entry's load started (see Stamp.InvalidBy).
const TagClockMargin = 100 * time.Millisecond

// Stamp is what a tagged entry records (its envelope's tag section, kept
// by the local tier too): its tags, when its load started (Unix ms), and per
// tag the tag's time its loader had read before the load (seen; nil: none).
type Stamp struct {
	Tags    []string
	created int64
	seen    []int64
}

// StampOf is the stamp an envelope's tag section records.
func StampOf(info wire.TagInfo) *Stamp {
	return &Stamp{Tags: info.Tags, created: info.Created.UnixMilli(), seen: info.Seen}
}

// NewStamp is the stamp of a fill of a value with tags (none: nil) whose
// load started at created, after the tags' times in seen were read.
func NewStamp(tags []string, created time.Time, seen map[string]int64) *Stamp {
	if len(tags) == 0 {
		return nil
	}
	st := &Stamp{Tags: tags, created: created.UnixMilli()}
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

// SeenTimes returns the seen times to write (nil: none).
func (s *Stamp) SeenTimes() []int64 {
	if s == nil {
		return nil
	}
	return s.seen
}

// SeenOf returns the time of Tags[i] the entry's loader read (0: none).
func (s *Stamp) SeenOf(i int) int64 {
	if s.seen == nil {
		return 0
	}
	return s.seen[i]
}

// InvalidBy is the rule every check of a tagged entry applies (a Redis hit,
// a batch's hits, the fill path's, a local hit): is the entry invalidated
// by its tag Tags[i], whose time is inv (0: never invalidated)? A tag's
// time grows with every invalidation, so where the loader read the tag's
// time, the entry is invalid exactly when the time is later now: no clock
// involved. Where it read none, or read a later one than inv (Redis forgot
// the tag's time and a new invalidation set it again), the clock rule:
// created ≤ inv + TagClockMargin.
func (s *Stamp) InvalidBy(i int, inv int64) bool {
	if inv == 0 {
		return false
	}
	if seen := s.SeenOf(i); seen > 0 && inv >= seen {
		return inv > seen
	}
	return s.created <= inv+TagClockMargin.Milliseconds()
}
