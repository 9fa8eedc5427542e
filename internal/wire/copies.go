package wire

import "strings"

// Hot-key copies (cache.WithHotKeyCopies). A copy of the entry under rkey,
// a key of the cache of prefix in any generation, lives under
//
//	prefix + GenerationMark + "copy{" + tag + "}" + GenerationMark + rkey without prefix
//
// The hash tag is the first in the key, so it alone decides the copy's
// slot: the cache picks tags whose slots other masters own. The prefix must
// not contain a brace, or its own would decide instead. ParseEntryKey reads
// no copy as an entry (the digits of a generation are never "copy{…}"), and
// a user key cannot begin with GenerationMark (ReservedKey), so no entry key
// is a copy key either.
const copyMark = GenerationMark + "copy{"

// CopyKey is the key of the copy of rkey, a key of the cache of prefix,
// whose slot tag decides.
func CopyKey(prefix, rkey, tag string) string {
	return prefix + copyMark + tag + "}" + GenerationMark + rkey[len(prefix):]
}

// IsCopyKey reports a copy's key, of a cache of any prefix.
func IsCopyKey(k string) bool {
	_, rest, ok := strings.Cut(k, copyMark)
	return ok && strings.Contains(rest, "}"+GenerationMark)
}

// BarrierKey is the key a cache of prefix writes on rkey's slot before it
// waits for the replicas of that slot's master to acknowledge
// (cache.WithReplicaReads). It holds nothing of use and expires.
func BarrierKey(prefix, rkey string) string {
	return prefix + barrierMark + SlotTag(Slot(rkey)) + "}"
}

const barrierMark = GenerationMark + "barrier{"

// IsBarrierKey reports a barrier key, of a cache of any prefix.
func IsBarrierKey(k string) bool {
	_, rest, ok := strings.Cut(k, barrierMark)
	return ok && strings.HasSuffix(rest, "}")
}
