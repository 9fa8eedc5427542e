package main

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"
)

// The byte formats inspect recognises. They mirror the writers (cache/envelope.go,
// cache/lease.go, consistency/layout.go, bloom/redis.go, lock/keys.go); the
// command's tests write their keys through those packages, so a format change
// there fails here.
const (
	magic0        = 0xFE
	magicEnvelope = 'c'
	magicLease    = 'l'
	envFormat     = 1
	headerSize    = 28
	leaseSize     = 2 + 16

	flagNull       = 1 << 0
	flagCompressed = 1 << 1
	flagStale      = 1 << 2
)

// entryHeader is what inspect reads of a cache envelope: its first bytes.
type entryHeader struct {
	flags  byte
	expiry time.Time // logical expiry written by the filler
}

// parseHeader parses the first bytes of a string value (at most headerSize
// were fetched) and the value's full length. ok is false for anything that is
// not a cache envelope.
func parseHeader(head []byte) (h entryHeader, ok bool) {
	if len(head) < headerSize || head[0] != magic0 || head[1] != magicEnvelope || head[2] != envFormat {
		return h, false
	}
	h.flags = head[3]
	ms := binary.BigEndian.Uint64(head[12:20])
	if ms < 1<<62 {
		h.expiry = time.UnixMilli(int64(ms))
	}
	return h, true
}

// isPlaceholder reports whether a string of length n starting with head is a
// fill lease placeholder.
func isPlaceholder(head []byte, n int64) bool {
	return n == leaseSize && len(head) >= 2 && head[0] == magic0 && head[1] == magicLease
}

// queueDue returns the target of a consistency retry queue key
// "{ns}:due:<target>".
func queueDue(key string) (ns, target string, ok bool) {
	ns, rest, ok := hashTagged(key)
	if !ok || !strings.HasPrefix(rest, ":due:") {
		return "", "", false
	}
	return ns, rest[len(":due:"):], true
}

// hashTagged splits "{tag}rest" (tag non-empty).
func hashTagged(key string) (tag, rest string, ok bool) {
	if !strings.HasPrefix(key, "{") {
		return "", "", false
	}
	end := strings.IndexByte(key, '}')
	if end <= 1 {
		return "", "", false
	}
	return key[1:end], key[end+1:], true
}

// bloomConfig parses a Redis Bloom filter's "{N}:cfg" value,
// "m=… k=… v=… ready=0|1".
func bloomConfig(s string) (m, k uint64, ready, ok bool) {
	var haveM bool
	for _, f := range strings.Fields(s) {
		name, val, found := strings.Cut(f, "=")
		if !found {
			continue
		}
		switch name {
		case "m":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil || n == 0 {
				return 0, 0, false, false
			}
			m, haveM = n, true
		case "k":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return 0, 0, false, false
			}
			k = n
		case "ready":
			ready = val == "1"
		}
	}
	return m, k, ready, haveM
}

// lockName returns the lock name of a lock hash key: prefix + "{name}" (a
// mutex) or prefix + "{name}:rw" (a read-write lock's writer).
func lockName(key string) (name, kind string, ok bool) {
	i := strings.LastIndexByte(key, '{')
	if i < 0 {
		return "", "", false
	}
	_, rest, ok := hashTagged(key[i:])
	if !ok {
		return "", "", false
	}
	switch rest {
	case "":
		return key, "mutex", true
	case ":rw":
		return strings.TrimSuffix(key, ":rw"), "rwmutex", true
	}
	return "", "", false
}

// unfencedLock reads a Mutex made WithoutFencing: a string "<holds>:<owner>"
// under a lock key. head is the value's first bytes, of strlen in all; a
// longer owner is shown cut, with "…".
func unfencedLock(key string, head []byte, strlen, ttl int64) (Lock, bool) {
	if _, kind, ok := lockName(key); !ok || kind != "mutex" {
		return Lock{}, false
	}
	n, owner, ok := strings.Cut(string(head), ":")
	holds, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || holds < 1 || owner == "" {
		return Lock{}, false // some other program's string
	}
	if strlen > int64(len(head)) {
		owner += "…"
	}
	return Lock{Key: key, Kind: "mutex (unfenced)", Owner: owner, Holds: holds, TTLms: ttl}, true
}
