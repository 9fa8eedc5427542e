package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/write"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Every shape a cache key can hold goes through every script that reads it,
// and the table states what each script does with each. A shape added to
// wire.Shapes without samples here, or a sample without an expectation for
// every script, fails the test.

// shapeSample is one value of a shape, as a writer leaves it.
type shapeSample struct {
	name  string
	shape wire.Shape
	value []byte // nil: no key
}

// outcome is what a script does to a sample: its reply and what the key
// holds after (same: the bytes are unchanged; version: the version the
// key's value carries after, in whatever shape; stale: the entry is
// marked stale).
type outcome struct {
	reply   int64
	after   wire.Shape
	version uint64
	same    bool
	stale   bool
}

func unchanged(reply int64) outcome { return outcome{reply: reply, same: true} }

// tableScript is a script of the package run with the arguments a caller
// gives it; ours is the base of the placeholder the caller holds.
type tableScript struct {
	name string
	run  func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error)
}

func shapeSamples(ours, other string) []shapeSample {
	exp := time.Now().Add(time.Hour)
	v5 := "\x00\x00\x00\x00\x00\x00\x00\x05"
	mark := string(rune(wire.WaitMark))
	return []shapeSample{
		{"absent", wire.ShapeAbsent, nil},
		{"envelope", wire.ShapeEnvelope, wire.AppendEnvelope(nil, 0, 0, exp, time.Millisecond, []byte(`"old"`))},
		{"envelope v5", wire.ShapeEnvelope, wire.AppendEnvelope(nil, 0, 5, exp, time.Millisecond, []byte(`"old"`))},
		{"compressed envelope", wire.ShapeEnvelope, wire.AppendEnvelope(nil, wire.FlagCompressed, 0, exp, time.Millisecond, []byte("\x05\x10\"old\""))},
		{"refreshing envelope", wire.ShapeEnvelope, wire.AppendEnvelope(nil, wire.FlagRefreshing, 0, exp, time.Millisecond, []byte(`"old"`))},
		{"null envelope", wire.ShapeNullEnvelope, wire.AppendEnvelope(nil, wire.FlagNull, 0, exp, 0, nil)},
		{"null envelope v5", wire.ShapeNullEnvelope, wire.AppendEnvelope(nil, wire.FlagNull, 5, exp, 0, nil)},
		{"our placeholder", wire.ShapePlaceholder, []byte(ours)},
		{"our placeholder, waited on", wire.ShapePlaceholderMarked, []byte(ours + mark)},
		{"our placeholder, kept v5", wire.ShapePlaceholderKept, []byte(ours + v5)},
		{"our placeholder, kept v5, waited on", wire.ShapePlaceholderKeptMarked, []byte(ours + v5 + mark)},
		{"other placeholder", wire.ShapePlaceholder, []byte(other)},
		{"other placeholder, kept v5, waited on", wire.ShapePlaceholderKeptMarked, []byte(other + v5 + mark)},
		{"tombstone v5", wire.ShapeTombstone, wire.AppendTombstone(nil, 5)},
		{"foreign", wire.ShapeForeign, []byte(`{"id":1}`)},
		{"envelope of a newer writer", wire.ShapeForeign, wire.AppendEnvelope(nil, 1<<7, 0, exp, 0, []byte(`"old"`))},
		{"tagged envelope", wire.ShapeEnvelope, wire.AppendTaggedEnvelope(nil, 0, 0, exp, time.Millisecond, time.Now(), []string{"t"}, nil, []byte(`"old"`))},
		{"tagged envelope v5", wire.ShapeEnvelope, wire.AppendTaggedEnvelope(nil, 0, 5, exp, time.Millisecond, time.Now(), []string{"t"}, nil, []byte(`"old"`))},
	}
}

func versionArg(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func shapeScripts() []tableScript {
	exp := time.Now().Add(time.Hour)
	minute := time.Minute.Milliseconds()
	int64Of := func(cmd *redis.Cmd) (int64, error) {
		n, err := cmd.Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	}
	return []tableScript{
		{"fill", func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error) {
			env := wire.AppendEnvelope(nil, 0, 0, exp, time.Millisecond, []byte(`"new"`))
			return int64Of(lease.FillScript.Run(ctx, rdb, []string{key}, ours, env, minute, "", "")) // no notification
		}},
		{"extend", func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error) {
			return int64Of(lease.ExtendScript.Run(ctx, rdb, []string{key}, ours, minute))
		}},
		{"release", func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error) {
			return int64Of(lease.ReleaseScript.Run(ctx, rdb, []string{key}, ours, "", ""))
		}},
		{"wait-mark", func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error) {
			return int64Of(lease.MarkWaitScript.Run(ctx, rdb, []string{key}, ours))
		}},
		{"MarkStale", func(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
			return int64Of(write.MarkStaleScript.Run(ctx, rdb, []string{key}, minute))
		}},
		{"SetVersioned(3)", func(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
			env := wire.AppendEnvelope(nil, 0, 3, exp, 0, []byte(`"v3"`))
			return int64Of(write.VersionedSetScript.Run(ctx, rdb, []string{key}, versionArg(3), env, minute))
		}},
		{"DeleteVersioned(7)", func(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
			env := wire.AppendEnvelope(nil, wire.FlagNull, 7, exp, 0, nil)
			return int64Of(write.VersionedSetScript.Run(ctx, rdb, []string{key}, versionArg(7), env, minute))
		}},
		{"DeleteKeepingVersion", func(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
			return int64Of(write.DeleteKeepingVersionScript.Run(ctx, rdb, []string{key}, minute))
		}},
		{"Set", func(ctx context.Context, rdb redis.UniversalClient, key, _ string) (int64, error) {
			env := wire.AppendEnvelope(nil, 0, 0, exp, 0, []byte(`"set"`))
			return int64Of(write.SetKeepingVersionScript.Run(ctx, rdb, []string{key}, env, minute))
		}},
		{"take over", func(ctx context.Context, rdb redis.UniversalClient, key, ours string) (int64, error) {
			cur, err := rdb.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				cur = []byte("nothing")
			} else if err != nil {
				return 0, err
			}
			return int64Of(lease.SwapScript.Run(ctx, rdb, []string{key}, cur, ours, minute))
		}},
	}
}

// Outcomes shared by several samples.
var (
	// notHeld: a value that is not the caller's lease.
	notHeld = map[string]outcome{"fill": unchanged(0), "extend": unchanged(0), "release": unchanged(0), "wait-mark": unchanged(0)}
	// versionZero: a value carrying no version; the writes land, a take
	// over installs a plain placeholder.
	versionZero = map[string]outcome{
		"SetVersioned(3)": {reply: 1, after: wire.ShapeEnvelope, version: 3}, "DeleteVersioned(7)": {reply: 1, after: wire.ShapeNullEnvelope, version: 7},
		"DeleteKeepingVersion": {reply: 1, after: wire.ShapeAbsent}, "Set": {reply: 1, after: wire.ShapeEnvelope},
		"take over": {reply: 1, after: wire.ShapePlaceholder},
	}
	// version5: a value carrying version 5, in any shape: an older write is
	// refused, a newer one lands, and the version survives every other
	// write.
	version5 = map[string]outcome{
		"SetVersioned(3)": unchanged(0), "DeleteVersioned(7)": {reply: 1, after: wire.ShapeNullEnvelope, version: 7},
		"DeleteKeepingVersion": {reply: 2, after: wire.ShapeTombstone, version: 5}, "Set": {reply: 1, after: wire.ShapeEnvelope, version: 5},
		"take over": {reply: 1, after: wire.ShapePlaceholderKept, version: 5},
	}
	// ours: the caller's lease, with what its fill leaves (version) and
	// what a waiter's mark makes of it.
	ours = func(version uint64, marked outcome, released wire.Shape) map[string]outcome {
		return map[string]outcome{
			"fill": {reply: 1, after: wire.ShapeEnvelope, version: version}, "extend": unchanged(1),
			"release": {reply: 1, after: released, version: version}, "wait-mark": marked,
		}
	}
	staleMarked = map[string]outcome{"MarkStale": {reply: 1, after: wire.ShapeEnvelope, stale: true}}
	deleted     = map[string]outcome{"MarkStale": {reply: 2, after: wire.ShapeAbsent}}
	keptAsTomb  = map[string]outcome{"MarkStale": {reply: 2, after: wire.ShapeTombstone, version: 5}}
	left        = map[string]outcome{"MarkStale": unchanged(3)}
)

// row merges the outcomes of parts; a later part overrides an earlier one.
func row(parts ...map[string]outcome) map[string]outcome {
	r := map[string]outcome{}
	for _, p := range parts {
		for k, v := range p {
			r[k] = v
		}
	}
	return r
}

// shapeTable: sample -> script -> outcome. The read path's and inspect's
// classification is the sample's shape itself (checked for every sample).
var shapeTable = map[string]map[string]outcome{
	"absent": row(notHeld, versionZero, map[string]outcome{
		"MarkStale": unchanged(0), "DeleteKeepingVersion": unchanged(0), "take over": unchanged(0),
	}),
	"envelope":            row(notHeld, versionZero, staleMarked),
	"envelope v5":         row(notHeld, version5, map[string]outcome{"MarkStale": {reply: 1, after: wire.ShapeEnvelope, version: 5, stale: true}}),
	"compressed envelope": row(notHeld, versionZero, staleMarked),
	"refreshing envelope": row(notHeld, versionZero, staleMarked),
	"null envelope":       row(notHeld, versionZero, deleted),
	"null envelope v5":    row(notHeld, version5, left),
	"our placeholder": row(ours(0, outcome{reply: 1, after: wire.ShapePlaceholderMarked}, wire.ShapeAbsent), versionZero, deleted,
		map[string]outcome{"take over": unchanged(1)}),
	"our placeholder, waited on": row(ours(0, unchanged(1), wire.ShapeAbsent), versionZero, deleted),
	"our placeholder, kept v5": row(ours(5, outcome{reply: 1, after: wire.ShapePlaceholderKeptMarked, version: 5}, wire.ShapeTombstone),
		version5, keptAsTomb),
	"our placeholder, kept v5, waited on":   row(ours(5, unchanged(1), wire.ShapeTombstone), version5, keptAsTomb),
	"other placeholder":                     row(notHeld, versionZero, deleted),
	"other placeholder, kept v5, waited on": row(notHeld, version5, keptAsTomb),
	"tombstone v5": row(notHeld, version5, left, map[string]outcome{
		"take over": {reply: 1, after: wire.ShapePlaceholderKept, version: 5},
	}),
	"foreign":            row(notHeld, versionZero, deleted),
	"tagged envelope":    row(notHeld, versionZero, staleMarked),
	"tagged envelope v5": row(notHeld, version5, map[string]outcome{"MarkStale": {reply: 1, after: wire.ShapeEnvelope, version: 5, stale: true}}),
	"envelope of a newer writer": row(notHeld, versionZero, map[string]outcome{
		"MarkStale": {reply: 1, after: wire.ShapeForeign, stale: true},
	}),
}

// versionIn is the version v carries in whatever shape (0: none).
func versionIn(v []byte) uint64 {
	if e, ok := wire.DecodeEnvelope(v); ok {
		return e.Version
	}
	if h, ok := wire.ParseHeader(v); ok {
		return h.Version
	}
	if ver, ok := wire.TombstoneVersion(v); ok {
		return ver
	}
	if p, ok := wire.ParsePlaceholder(v); ok {
		return p.Version
	}
	return 0
}

func TestEveryShapeThroughEveryScript(t *testing.T) {
	var tok, tok2 [wire.TokenSize]byte
	tok[0], tok2[0] = 1, 2
	ours, other := wire.Placeholder(tok), wire.Placeholder(tok2)
	samples, scripts := shapeSamples(ours, other), shapeScripts()

	// The table covers every shape, and every sample is what it says.
	covered := map[wire.Shape]bool{}
	for _, s := range samples {
		covered[s.shape] = true
		if got := wire.Classify(s.value); got != s.shape {
			t.Errorf("sample %q classifies as %q, want %q", s.name, got, s.shape)
		}
		// The read path decodes whatever looks like an envelope and
		// takes what does not decode for foreign bytes.
		want := entry.Foreign
		switch {
		case wire.IsEnvelope(s.value):
			want = entry.Envelope
		case s.shape.IsPlaceholder():
			want = entry.Lease
		}
		if got := entry.Classify(s.value); got != want {
			t.Errorf("sample %q: the read path takes it for %v, want %v", s.name, got, want)
		}
		for _, sc := range scripts {
			if _, ok := shapeTable[s.name][sc.name]; !ok {
				t.Errorf("no expectation for %s over %q", sc.name, s.name)
			}
		}
	}
	for _, sh := range wire.Shapes() {
		if !covered[sh] {
			t.Errorf("shape %q has no sample: add one, and its outcome under every script", sh)
		}
	}
	if len(shapeTable) != len(samples) {
		t.Errorf("%d rows for %d samples", len(shapeTable), len(samples))
	}
	if t.Failed() {
		t.FailNow()
	}

	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := prefixFor(t) + "k"
		for _, s := range samples {
			for _, sc := range scripts {
				want := shapeTable[s.name][sc.name]
				if err := rdb.Del(ctx, key).Err(); err != nil {
					t.Fatal(err)
				}
				if s.value != nil {
					if err := rdb.Set(ctx, key, s.value, time.Minute).Err(); err != nil {
						t.Fatal(err)
					}
				}
				reply, err := sc.run(ctx, rdb, key, ours)
				if err != nil {
					t.Errorf("%s over %q: %v", sc.name, s.name, err)
					continue
				}
				after, err := rdb.Get(ctx, key).Bytes()
				if errors.Is(err, redis.Nil) {
					after, err = nil, nil
				}
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case reply != want.reply:
					t.Errorf("%s over %q replied %d, want %d", sc.name, s.name, reply, want.reply)
				case want.same && !bytes.Equal(after, s.value):
					t.Errorf("%s over %q changed it to %q (%q)", sc.name, s.name, wire.Classify(after), after)
				case want.same:
				case wire.Classify(after) != want.after:
					t.Errorf("%s over %q left %q (%q), want %q", sc.name, s.name, wire.Classify(after), after, want.after)
				case versionIn(after) != want.version:
					t.Errorf("%s over %q left version %d, want %d", sc.name, s.name, versionIn(after), want.version)
				case want.stale:
					if h, _ := wire.ParseHeader(after); h.Flags&wire.FlagStale == 0 || h.Flags&wire.FlagRefreshing != 0 {
						t.Errorf("%s over %q left flags %08b, want stale and not refreshing", sc.name, s.name, h.Flags)
					}
				}
			}
		}
	})
}
