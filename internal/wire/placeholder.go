package wire

import "encoding/binary"

// A lease placeholder is Magic MagicLease followed by a random token that
// names the holder (PlaceholderSize bytes in all: the base). Two things may be
// appended to it, in this order:
//
//   - the version the lease kept (VersionSize bytes), when it took over a
//     version tombstone: the fill writes it into its envelope, a release or
//     a MarkStale gives it back as a tombstone;
//   - WaitMark, appended (APPEND, which keeps the TTL) by a reader of another
//     instance that waits for the fill: the fill then publishes.
//
// So a placeholder has one of four lengths: PlaceholderSize (base),
// PlaceholderMarkedSize, PlaceholderKeptSize, PlaceholderKeptMarkedSize.
//
// A version tombstone is Magic MagicTombstone and a version: what
// DeleteKeepingVersion leaves so that an older versioned write stays refused.
// Readers see a miss.
const (
	TokenSize = 16

	PlaceholderSize           = 2 + TokenSize
	PlaceholderMarkedSize     = PlaceholderSize + 1
	PlaceholderKeptSize       = PlaceholderSize + VersionSize
	PlaceholderKeptMarkedSize = PlaceholderKeptSize + 1

	// WaitMark is the byte a waiter appends to a placeholder.
	WaitMark = 'w'

	TombstoneSize = 2 + VersionSize
)

// Placeholder returns the base placeholder of a lease holding token.
func Placeholder(token [TokenSize]byte) string {
	b := make([]byte, 0, PlaceholderSize)
	b = append(b, Magic, MagicLease)
	b = append(b, token[:]...)
	return string(b)
}

// Placeholder is a placeholder read back, split in its parts.
type PlaceholderParts struct {
	Base    []byte // magic and token: what the holder compares
	Kept    bool   // a version was kept
	Version uint64 // the kept version
	Marked  bool   // a waiter marked it
}

// ParsePlaceholder splits b if it is a placeholder of one of the four shapes.
func ParsePlaceholder(b []byte) (p PlaceholderParts, ok bool) {
	if len(b) < PlaceholderSize || b[0] != Magic || b[1] != MagicLease {
		return p, false
	}
	switch len(b) {
	case PlaceholderSize:
	case PlaceholderKeptSize:
		p.Kept = true
	case PlaceholderMarkedSize:
		p.Marked = true
	case PlaceholderKeptMarkedSize:
		p.Kept, p.Marked = true, true
	default:
		return p, false
	}
	if p.Marked && b[len(b)-1] != WaitMark {
		return PlaceholderParts{}, false
	}
	p.Base = b[:PlaceholderSize]
	if p.Kept {
		p.Version = binary.BigEndian.Uint64(b[PlaceholderSize:PlaceholderKeptSize])
	}
	return p, true
}

// PlaceholderBase is a placeholder as read, without the version it may have
// kept or a wait mark: the magic and the token that a holder compares.
func PlaceholderBase(b []byte) []byte {
	if len(b) > PlaceholderSize {
		return b[:PlaceholderSize]
	}
	return b
}

// AppendTombstone appends a version tombstone of version to dst.
func AppendTombstone(dst []byte, version uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, Magic, MagicTombstone), version)
}

// IsTombstone reports whether b is a version tombstone.
func IsTombstone(b []byte) bool {
	return len(b) == TombstoneSize && b[0] == Magic && b[1] == MagicTombstone
}

// TombstoneVersion returns the version of a version tombstone.
func TombstoneVersion(b []byte) (uint64, bool) {
	if !IsTombstone(b) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[2:]), true
}
