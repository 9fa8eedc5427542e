package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTaggedEnvelopeRoundTrip(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123)
	created := time.UnixMilli(1_700_000_000_000)
	tags := []string{"org:{7}", "a:b:c", strings.Repeat("x", MaxTagSize)}
	b := AppendTaggedEnvelope(nil, FlagCompressed, 9, exp, time.Second, created, tags, nil, []byte("payload"))
	if !IsTagged(b) || Classify(b) != ShapeEnvelope {
		t.Fatalf("tagged %v, shape %v", IsTagged(b), Classify(b))
	}
	e, ok := DecodeEnvelope(b)
	if !ok || e.Flags != FlagCompressed|FlagTagged || e.Version != 9 || !e.Created.Equal(created) ||
		string(e.Payload) != "payload" || len(e.Header) != HeaderSize || strings.Join(e.Tags, ",") != strings.Join(tags, ",") {
		t.Fatalf("decoded %+v, %v", e, ok)
	}
	if info, ok := ParseTags(b); !ok || len(info.Tags) != 3 || !info.Created.Equal(created) {
		t.Fatalf("ParseTags %+v, %v", info, ok)
	}
	// An untagged envelope keeps its layout: header then payload.
	plain := AppendEnvelope(nil, 0, 0, exp, 0, []byte("p"))
	if IsTagged(plain) || len(plain) != HeaderSize+1 || !bytes.Equal(plain[HeaderSize:], []byte("p")) {
		t.Fatalf("untagged envelope changed: %q", plain)
	}
}

func TestTaggedEnvelopeTruncatedIsForeign(t *testing.T) {
	for _, seen := range [][]int64{nil, {5, 0}} {
		b := AppendTaggedEnvelope(nil, 0, 0, time.Now(), 0, time.Now(), []string{"t1", "t2"}, seen, nil)
		for n := HeaderSize; n < len(b); n++ {
			if _, ok := DecodeEnvelope(b[:n]); ok {
				t.Errorf("seen %v: cut at %d decoded", seen, n)
			}
			if s := Classify(b[:n]); s != ShapeForeign {
				t.Errorf("seen %v: cut at %d classified %v", seen, n, s)
			}
		}
		if _, ok := DecodeEnvelope(b); !ok {
			t.Fatalf("seen %v: whole value refused", seen)
		}
	}
}

// Seen times round-trip under FlagTagSeen, written only when one is not 0:
// an entry whose loader read none has the section without them.
func TestTaggedEnvelopeSeenTimes(t *testing.T) {
	created := time.UnixMilli(1_700_000_000_000)
	tags := []string{"a", "b", "c"}
	b := AppendTaggedEnvelope(nil, 0, 0, time.Now(), 0, created, tags, []int64{1_700_000_000_001, 0, 3}, []byte("p"))
	e, ok := DecodeEnvelope(b)
	if !ok || e.Flags != FlagTagged|FlagTagSeen || string(e.Payload) != "p" ||
		len(e.Seen) != 3 || e.Seen[0] != 1_700_000_000_001 || e.Seen[1] != 0 || e.Seen[2] != 3 {
		t.Fatalf("decoded %+v, %v", e, ok)
	}
	if len(b) != HeaderSize+TagSectionSize(tags, []int64{1, 0, 3})+1 {
		t.Errorf("%d bytes, TagSectionSize says %d", len(b), HeaderSize+TagSectionSize(tags, []int64{1, 0, 3})+1)
	}
	if info, ok := ParseTags(b); !ok || len(info.Seen) != 3 || info.Seen[2] != 3 {
		t.Fatalf("ParseTags %+v, %v", info, ok)
	}
	none := AppendTaggedEnvelope(nil, 0, 0, time.Now(), 0, created, tags, []int64{0, 0, 0}, []byte("p"))
	old := AppendTaggedEnvelope(nil, 0, 0, time.Now(), 0, created, tags, nil, []byte("p"))
	if none[FlagsOffset] != FlagTagged || len(none) != len(old) || len(none) != HeaderSize+TagSectionSize(tags, nil)+1 {
		t.Fatalf("no seen time: flags %#x, %d bytes, want the section without them (%d)", none[FlagsOffset], len(none), len(old))
	}
	if e, ok := DecodeEnvelope(old); !ok || e.Seen != nil || string(e.Payload) != "p" {
		t.Fatalf("section without seen times decoded %+v, %v", e, ok)
	}
	// Seen times without a tag section are not an envelope this reader
	// reads.
	plain := AppendEnvelope(nil, FlagTagSeen, 0, time.Now(), 0, []byte("p"))
	if _, ok := DecodeEnvelope(plain); ok || Classify(plain) != ShapeForeign {
		t.Fatal("FlagTagSeen without FlagTagged decoded")
	}
}

func TestCheckTags(t *testing.T) {
	many := make([]string, MaxTags+1)
	for i := range many {
		many[i] = "t"
	}
	for name, tags := range map[string][]string{
		"empty tag": {"a", ""},
		"too many":  many,
		"too long":  {strings.Repeat("x", MaxTagSize+1)},
	} {
		if err := CheckTags(tags); !errors.Is(err, ErrBadTag) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckTags(append(many[:MaxTags:MaxTags], []string{}...)); err != nil {
		t.Errorf("MaxTags tags: %v", err)
	}
}

func TestTagKey(t *testing.T) {
	for _, c := range []struct{ prefix, tag string }{{"user:", "org:1"}, {"", "{x}"}, {"a{b", "c}:d"}} {
		k := TagKey(c.prefix, c.tag)
		p, tag, ok := ParseTagKey(k)
		if !ok || p != c.prefix || tag != c.tag {
			t.Errorf("%q: parsed %q %q %v", k, p, tag, ok)
		}
		// One hash tag per cache, never empty.
		h, ok := HashTag(k)
		h2, _ := HashTag(TagKey(c.prefix, "other"))
		if !ok || h != h2 {
			t.Errorf("%q: hash tag %q (%v), another tag's %q", k, h, ok, h2)
		}
	}
}

func TestInvalidationTagsRoundTrip(t *testing.T) {
	m := Invalidation{Seq: 3, Keys: []string{"k"}, TagTime: 1_700_000_000_000, Tags: []string{"a", "{b}"}}
	got, err := DecodeInvalidation(EncodeInvalidation(m))
	if err != nil || got.TagTime != m.TagTime || strings.Join(got.Tags, ",") != "a,{b}" || len(got.Keys) != 1 {
		t.Fatalf("%+v, %v", got, err)
	}
	plain, err := DecodeInvalidation(EncodeInvalidation(Invalidation{Seq: 1, Keys: []string{"k"}}))
	if err != nil || plain.Tags != nil || plain.TagTime != 0 {
		t.Fatalf("%+v, %v", plain, err)
	}
	b := EncodeInvalidation(m)
	for n := InvalidationHeaderSize; n < len(b); n++ {
		if got, err := DecodeInvalidation(b[:n]); err == nil && len(got.Tags) == 2 {
			t.Errorf("cut at %d decoded both tags", n)
		}
	}
}

// A tag message is of its own format, so that a reader that knows no tags
// refuses it instead of reading it as a message without keys; bytes after
// its tags are skipped like those after a plain message's keys.
func TestInvalidationTagsFormat(t *testing.T) {
	b := EncodeInvalidation(Invalidation{Seq: 1, TagTime: 5, Tags: []string{"a"}})
	if b[2] != InvalidationTagsFormat {
		t.Fatalf("format %d", b[2])
	}
	if m, err := DecodeInvalidation(append(b, 1, 2, 3)); err != nil || len(m.Tags) != 1 {
		t.Fatalf("with a trailer: %+v, %v", m, err)
	}
	if b := EncodeInvalidation(Invalidation{Seq: 1, Keys: []string{"k"}}); b[2] != InvalidationFormat {
		t.Fatalf("a message without tags changed format: %d", b[2])
	}
}
