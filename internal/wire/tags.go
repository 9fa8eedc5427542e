package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Tags. An envelope whose flags carry FlagTagged has a tag section between
// its header and its payload (the header keeps its size and offsets, so every
// script that reads or compares a header reads a tagged one unchanged; an
// untagged envelope's bytes are exactly what they were before tags):
//
//	28      8  created: Unix milliseconds when the entry's load started (or
//	           the write was made), on the writer's wall clock
//	36      2  tag count n, 1 ≤ n ≤ MaxTags
//	38      …  n times: 2 bytes length (1 ≤ length ≤ MaxTagSize), the tag's
//	           bytes, and with FlagTagSeen 8 bytes: the tag's invalidation
//	           time the entry's loader had read before its load started
//	           (Unix ms as stored under TagKey; 0: none read)
//	…       …  payload
//
// FlagTagSeen is set only when at least one seen time is not 0, so an entry
// whose loader read none has the layout above without them, as every entry
// had before the flag existed.
//
// A tag is any non-empty string of at most MaxTagSize bytes: braces, colons
// and any other byte are fine, since the tag is stored length-prefixed and
// placed in its key after the cache's hash tag.
//
// The time a tag was last invalidated lives under TagKey(prefix, tag), a
// decimal string of Unix milliseconds, kept for as long as an entry created
// before it can live. Every invalidation makes it grow: the invalidator's
// clock, or one more than the time stored if that is not earlier. An entry
// is invalidated by one of its tags when the tag's time is later than the
// seen time the entry records for it; where it records none (or a later
// one: Redis forgot the tag's time), when created ≤ invalidated + the clock
// margin the cache applies.
const (
	FlagTagged  = 1 << 4 // a tag section follows the header
	FlagTagSeen = 1 << 5 // with FlagTagged: each tag carries its seen time

	TagSeenSize = 8

	TagCreatedSize = 8
	TagCountSize   = 2
	TagLenSize     = 2

	// MaxTags bounds the tags of one entry, MaxTagSize the bytes of one tag.
	MaxTags    = 64
	MaxTagSize = 256
)

// Tag keys. Every tag key of a cache shares one hash tag built from the
// cache's prefix ("{t:" + prefix + "}", never empty), so that one MGET, or
// one script, reads or writes all the tags of any set of entries of one
// cache in one Cluster slot: a tagged read costs at most one more round trip
// whatever slots its entries hash to.
const TagKeyPrefix = "cacheguard:tag:"

// TagKey returns the key holding the invalidation time of tag in the cache
// whose prefix is prefix.
func TagKey(prefix, tag string) string {
	return TagKeyPrefix + "{t:" + prefix + "}:" + tag
}

// ParseTagKey splits a tag key into the cache's prefix and the tag. A prefix
// holding "}:" cannot be told from the tag; the first one ends the prefix.
func ParseTagKey(key string) (prefix, tag string, ok bool) {
	rest, found := strings.CutPrefix(key, TagKeyPrefix+"{t:")
	if !found {
		return "", "", false
	}
	prefix, tag, found = strings.Cut(rest, "}:")
	if !found || tag == "" {
		return "", "", false
	}
	return prefix, tag, true
}

// FormatTagTime and ParseTagTime write and read a tag key's value.
func FormatTagTime(ms int64) string { return strconv.FormatInt(ms, 10) }

func ParseTagTime(s string) (int64, bool) {
	ms, err := strconv.ParseInt(s, 10, 64)
	return ms, err == nil && ms >= 0
}

// ErrBadTag is returned for a tag list outside the limits.
var ErrBadTag = errors.New("tag outside the limits")

// CheckTags reports whether tags fit an envelope's tag section.
func CheckTags(tags []string) error {
	if len(tags) > MaxTags {
		return fmt.Errorf("%w: %d tags, at most %d", ErrBadTag, len(tags), MaxTags)
	}
	for _, t := range tags {
		if t == "" {
			return fmt.Errorf("%w: an empty tag", ErrBadTag)
		}
		if len(t) > MaxTagSize {
			return fmt.Errorf("%w: a tag of %d bytes, at most %d", ErrBadTag, len(t), MaxTagSize)
		}
	}
	return nil
}

// TagSectionSize is the size of the tag section for tags, with seen times
// if seen holds one that is not 0.
func TagSectionSize(tags []string, seen []int64) int {
	n := TagCreatedSize + TagCountSize
	for _, t := range tags {
		n += TagLenSize + len(t)
	}
	if anySeen(seen) {
		n += len(tags) * TagSeenSize
	}
	return n
}

func anySeen(seen []int64) bool {
	for _, ms := range seen {
		if ms != 0 {
			return true
		}
	}
	return false
}

// AppendTaggedEnvelope encodes an envelope carrying tags (checked with
// CheckTags first; not empty), its creation time and, for each tag, the
// tag's invalidation time its loader read (seen: nil, or one per tag, 0 for
// none, each below 1<<62); flags must not hold FlagTagged or FlagTagSeen,
// which it adds.
func AppendTaggedEnvelope(dst []byte, flags byte, version uint64, expiry time.Time, delta time.Duration, created time.Time, tags []string, seen []int64, payload []byte) []byte {
	withSeen := anySeen(seen)
	flags |= FlagTagged
	if withSeen {
		flags |= FlagTagSeen
	}
	dst = AppendEnvelope(dst, flags, version, expiry, delta, nil)
	dst = binary.BigEndian.AppendUint64(dst, uint64(created.UnixMilli()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(tags)))
	for i, t := range tags {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(t)))
		dst = append(dst, t...)
		if withSeen {
			dst = binary.BigEndian.AppendUint64(dst, uint64(seen[i]))
		}
	}
	return append(dst, payload...)
}

// IsTagged reports whether b starts like an envelope with a tag section.
func IsTagged[T string | []byte](b T) bool {
	return len(b) >= HeaderSize && b[0] == Magic && b[1] == MagicEnvelope && b[FormatOffset] == EnvelopeFormat && b[FlagsOffset]&FlagTagged != 0
}

// parseTagSection reads the tag section at the start of b (with seen times
// if withSeen) and returns what follows it.
func parseTagSection(b []byte, withSeen bool) (info TagInfo, rest []byte, ok bool) {
	if len(b) < TagCreatedSize+TagCountSize {
		return info, nil, false
	}
	ms := binary.BigEndian.Uint64(b)
	n := int(binary.BigEndian.Uint16(b[TagCreatedSize:]))
	b = b[TagCreatedSize+TagCountSize:]
	if ms >= 1<<62 || n == 0 || n > MaxTags {
		return info, nil, false
	}
	info.Tags = make([]string, n)
	if withSeen {
		info.Seen = make([]int64, n)
	}
	for i := range info.Tags {
		if len(b) < TagLenSize {
			return TagInfo{}, nil, false
		}
		l := int(binary.BigEndian.Uint16(b))
		if l == 0 || l > MaxTagSize || len(b)-TagLenSize < l {
			return TagInfo{}, nil, false
		}
		info.Tags[i] = string(b[TagLenSize : TagLenSize+l])
		b = b[TagLenSize+l:]
		if withSeen {
			if len(b) < TagSeenSize {
				return TagInfo{}, nil, false
			}
			s := binary.BigEndian.Uint64(b)
			if s >= 1<<62 {
				return TagInfo{}, nil, false
			}
			info.Seen[i] = int64(s)
			b = b[TagSeenSize:]
		}
	}
	info.Created = time.UnixMilli(int64(ms))
	return info, b, true
}

// TagInfo is what a tagged envelope's tag section holds.
type TagInfo struct {
	Created time.Time
	Tags    []string
	// Seen[i] is the time of Tags[i] the entry's loader had read (0:
	// none); nil when it read none (no FlagTagSeen).
	Seen []int64
}

// ParseTags reads the tag section of a tagged envelope (a reader that does
// not decode the payload: the read path's tag check, cacheguard inspect).
func ParseTags(b []byte) (TagInfo, bool) {
	if !IsTagged(b) {
		return TagInfo{}, false
	}
	info, _, ok := parseTagSection(b[HeaderSize:], b[FlagsOffset]&FlagTagSeen != 0)
	return info, ok
}
