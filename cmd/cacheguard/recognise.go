package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// recognise counts key (of Redis type typ; for a string, its first bytes
// head of strlen in all) if it is one of cacheguard's, by the layouts of
// internal/wire, and returns the second-round read it needs, if any. A
// string's value is read first (an entry is an entry whatever its key);
// then the key's name and type (wire.KeyLayout); then what only the value
// tells, a Mutex held.
func (s *scanner) recognise(ctx context.Context, k, typ string, head []byte, strlen, ttl int64, addr string, now time.Time) (followUp, bool) {
	if typ == "string" && s.stringShape(k, head, strlen, ttl, addr, now) {
		return followUp{}, false
	}
	name, ok := wire.KeyLayout(k, typ)
	if !ok {
		switch typ {
		case "string":
			if l, ok := stringLock(k, head, strlen, ttl); ok {
				s.rep.Locks = append(s.rep.Locks, l)
				s.count(wire.LayoutMutex)
			} else if wire.BinlogCandidate(head) {
				return s.binlog(k, now), true
			}
		case "hash":
			if _, kind, ok := wire.LockKey(k); ok && kind == wire.LockMutex {
				return s.lock(k, kind, ttl), true
			}
		}
		return followUp{}, false
	}
	s.count(name)
	switch name {
	case wire.LayoutBloomCfg:
		if bname, ok := wire.BloomName(k); ok {
			return s.bloom(ctx, bname, k), true
		}
	case wire.LayoutQueueDue:
		if ns, shard, target, ok := wire.QueueDue(k); ok {
			return s.queue(ns, shard, target, k, now), true
		}
	case wire.LayoutQueueDead:
		if ns, shard, ok := wire.QueueDead(k); ok {
			return s.dead(ns, shard, k), true
		}
	case wire.LayoutRWReaders:
		if base, kind, ok := wire.LockKey(k); ok && kind == wire.LockReaders {
			return s.readers(k, base, ttl), true
		}
	case wire.LayoutRWWriter:
		return s.lock(k, wire.LockRWMutex, ttl), true
	}
	return followUp{}, false
}

// stringShape counts a string whose value tells what it is: a tag's
// invalidation time, an entry, a lease placeholder, a version tombstone.
func (s *scanner) stringShape(k string, head []byte, strlen, ttl int64, addr string, now time.Time) bool {
	if prefix, tag, ok := wire.ParseTagKey(k); ok && strlen == int64(len(head)) {
		if ms, ok := wire.ParseTagTime(string(head)); ok {
			s.rep.Tags = append(s.rep.Tags, TagKey{Prefix: prefix, Tag: tag, Invalidated: time.UnixMilli(ms).UTC(), TTL: ttl})
			s.count(wire.LayoutTag)
			return true
		}
	}
	if h, ok := wire.ParseHeader(head); ok {
		if wire.IsCopyKey(k) { // a copy is not an entry of its own
			s.rep.Entries.Copies++
			s.count(wire.LayoutCopy)
			return true
		}
		s.entry(h, ttl, now)
		s.count(wire.LayoutEntry)
		return true
	}
	if strlen == int64(len(head)) { // the whole value was read
		switch shape := wire.Classify(head); {
		case shape.IsPlaceholder():
			s.placeholder(k, shape, ttl, addr)
			s.count(wire.LayoutLease)
			return true
		case shape == wire.ShapeTombstone:
			s.rep.Entries.Tombstones++
			s.count(wire.LayoutTombstone)
			return true
		}
	}
	return false
}

// count counts one key of the layout called name.
func (s *scanner) count(name string) {
	if s.rep.Keys == nil {
		s.rep.Keys = map[string]int64{}
	}
	s.rep.Keys[name]++
}

func (s *scanner) entry(h wire.Header, ttl int64, now time.Time) {
	e := &s.rep.Entries
	e.Count++
	if h.Flags&wire.FlagNull != 0 {
		e.Null++
	}
	if h.Flags&wire.FlagCompressed != 0 {
		e.Compressed++
	}
	if h.Flags&wire.FlagStale != 0 {
		e.Stale++
	}
	if h.Flags&wire.FlagRefreshing != 0 {
		e.Refreshing++
	}
	if h.Flags&wire.FlagTagged != 0 {
		e.Tagged++
	}
	if ttl < 0 {
		e.NoTTL++
		s.ttls.add(-1, 0)
		return
	}
	s.ttls.add(ttl, 0)
	s.expiries = append(s.expiries, now.UnixMilli()+ttl)
}

func (s *scanner) placeholder(key string, shape wire.Shape, ttl int64, addr string) {
	if ttl >= 0 && ttl <= s.opts.maxLease.Milliseconds() {
		s.rep.Leases.InFlight++
		return
	}
	s.rep.Leases.Stranded = append(s.rep.Leases.Stranded, Stranded{Key: key, Shape: string(shape), TTLms: ttl, Node: addr})
}

// stringLock reads a held Mutex: a string "#<token>:<holds>[w]:<owner>", or
// "<holds>:<owner>" made WithoutFencing, under a lock key (a released one,
// which keeps only its token, is no lock held). head is the value's first
// bytes, of strlen in all; a longer owner is shown cut, with "…".
func stringLock(key string, head []byte, strlen, ttl int64) (Lock, bool) {
	if _, kind, ok := wire.LockKey(key); !ok || kind != wire.LockMutex {
		return Lock{}, false
	}
	cut := ""
	if strlen > int64(len(head)) {
		cut = "…"
	}
	if l, ok := wire.ParseFencedLock(string(head)); ok {
		if l.Holds < 1 {
			return Lock{}, false
		}
		return Lock{Key: key, Kind: wire.LockMutex, Owner: l.Owner + cut, Holds: l.Holds, Token: strconv.FormatInt(l.Token, 10), TTLms: ttl}, true
	}
	holds, owner, ok := wire.ParseUnfencedLock(string(head))
	if !ok {
		return Lock{}, false // some other program's string
	}
	return Lock{Key: key, Kind: wire.LockMutex + " (unfenced)", Owner: owner + cut, Holds: holds, TTLms: ttl}, true
}

// queueTag is how the report names a queue shard: its hash tag.
func queueTag(ns string, shard int) string {
	return strings.TrimSuffix(wire.QueueKeys(ns, shard).Prefix, ":")
}
