package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// recognise sorts keys by the layouts of internal/wire; foreign data may be
// recognised as nothing, never panic.
func FuzzRecognise(f *testing.F) {
	for _, s := range []string{"", "{", "{}", "{a}", "{a}:due:", "{a}:due:t", "{a:3}:dead", "x{a}:rw", "x{a}:readers", "\xfe", "\xfec\x01",
		"\xfel0123456789abcdef", "\xfev01234567", "1:owner", "#1764000000000000:2w:owner", "1764000000000000", "m=1 k=2 v=1 ready=1"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		s := newScanner(inspectOptions{maxLease: time.Minute, top: 1}, nil)
		head := []byte(value)
		if len(head) > wire.HeaderSize {
			head = head[:wire.HeaderSize]
		}
		for _, typ := range []string{"string", "zset", "list", "hash"} {
			s.recognise(context.Background(), key, typ, head, int64(len(value)), -1, "a", time.Now())
		}
		busiestSecond([]int64{int64(len(key)), 0, -5})
	})
}

// Each string shape is counted where it belongs, whatever the key.
func TestRecogniseStrings(t *testing.T) {
	var tok [wire.TokenSize]byte
	ph := wire.Placeholder(tok)
	ver := string(wire.AppendTombstone(nil, 5)[2:])
	mark := string(rune(wire.WaitMark))
	s := newScanner(inspectOptions{maxLease: time.Minute, top: 1}, nil)
	env := wire.AppendEnvelope(nil, wire.FlagStale|wire.FlagRefreshing, 0, time.Now(), 0, []byte(strings.Repeat("x", 100)))
	tagged := wire.AppendTaggedEnvelope(nil, 0, 0, time.Now(), 0, time.Now(), []string{"org:1"}, nil, []byte("v"))
	for k, v := range map[string]string{
		"tagged": string(tagged), wire.TagKey("user:", "org:{1}"): wire.FormatTagTime(1_700_000_000_000),
		"ph": ph, "ph-marked": ph + mark, "ph-kept": ph + ver, "ph-kept-marked": ph + ver + mark,
		"tomb": string(wire.AppendTombstone(nil, 9)), "env": string(env),
		"foreign": ph + "x", "lock:{a}": "2:me",
		wire.CopyKey("user:", "user:42", "7"): string(env),
	} {
		head := []byte(v)[:min(len(v), wire.HeaderSize)]
		s.recognise(context.Background(), k, "string", head, int64(len(v)), -1, "node", time.Now())
	}
	r := s.rep
	if len(r.Leases.Stranded) != 4 {
		t.Errorf("stranded %+v, want the four placeholder shapes", r.Leases.Stranded)
	}
	if r.Entries.Count != 2 || r.Entries.Stale != 1 || r.Entries.Refreshing != 1 || r.Entries.Tombstones != 1 || r.Entries.Tagged != 1 || r.Entries.Copies != 1 {
		t.Errorf("entries %+v, want one stale entry under refresh, one tagged entry, one tombstone and one copy", r.Entries)
	}
	if len(r.Tags) != 1 || r.Tags[0].Prefix != "user:" || r.Tags[0].Tag != "org:{1}" || r.Tags[0].Invalidated.UnixMilli() != 1_700_000_000_000 {
		t.Errorf("tag keys %+v", r.Tags)
	}
	if len(r.Locks) != 1 || r.Locks[0].Owner != "me" || r.Locks[0].Holds != 2 {
		t.Errorf("locks %+v, want lock:{a} held twice by me", r.Locks)
	}
}

// The other types: queue shards, dead letters, lock hashes and reader sets,
// also under names that carry their own hash tag.
func TestRecogniseKeys(t *testing.T) {
	s := newScanner(inspectOptions{maxLease: time.Minute, top: 1}, nil)
	for _, c := range []struct {
		key, typ string
		follow   bool
	}{
		{"{wq}:due:users", "zset", true},
		{"{wq:3}:due:users", "zset", true},
		{"{wq:3}:dead", "list", true},
		{"{wq:3}:data", "list", false},
		{"lock:{orders}", "hash", true},
		{"lock:orders:{42}:lock", "hash", true},
		{"lock:orders:{42}:lock:rw", "hash", true},
		{"lock:orders:{42}:lock:readers", "zset", true},
		{"lock:orders:{42}:lock:holds", "hash", false},
		{"plain", "hash", false},
		{"{users}:cfg", "string", true},
		{"a-set", "set", false},
	} {
		if _, ok := s.recognise(context.Background(), c.key, c.typ, nil, 0, -1, "node", time.Now()); ok != c.follow {
			t.Errorf("%s %q: second-round read %v, want %v", c.typ, c.key, ok, c.follow)
		}
	}
}

func TestBusiestSecondCountsAcrossABoundary(t *testing.T) {
	// 3 keys at 1.9 s and 2 keys at 2.1 s are one burst, whatever the second
	// boundary says; one at 3.5 s is not part of it.
	at, n := busiestSecond([]int64{1900, 2100, 1900, 3500, 2100, 1900})
	if n != 5 || at != 1900 {
		t.Fatalf("busiestSecond = %d at %d, want 5 at 1900", n, at)
	}
	if _, n := busiestSecond(nil); n != 0 {
		t.Fatalf("no expiries: %d", n)
	}
}
