package wire

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123)
	b := AppendEnvelope(nil, FlagStale, 42, exp, 1500*time.Millisecond, []byte("payload"))
	if Classify(b) != ShapeEnvelope {
		t.Fatal("not classified as an envelope")
	}
	e, ok := DecodeEnvelope(b)
	if !ok || e.Version != 42 || !e.Expiry.Equal(exp) || e.Delta != 1500*time.Millisecond ||
		e.Flags != FlagStale || string(e.Payload) != "payload" || len(e.Header) != HeaderSize {
		t.Fatalf("decoded %+v, %v", e, ok)
	}
	h, ok := ParseHeader(b[:HeaderSize])
	if !ok || h.Flags != FlagStale || h.Version != 42 || !h.Expiry.Equal(exp) {
		t.Fatalf("header %+v, %v", h, ok)
	}
	// Two fills of the same value never share a header (the nonce differs).
	b2 := AppendEnvelope(nil, FlagStale, 42, exp, 1500*time.Millisecond, []byte("payload"))
	if bytes.Equal(b[:HeaderSize], b2[:HeaderSize]) {
		t.Fatal("two envelopes share a header")
	}
}

func TestClassify(t *testing.T) {
	ph := Placeholder([TokenSize]byte{1})
	ver := "\x00\x00\x00\x00\x00\x00\x00\x05"
	mark := string(rune(WaitMark))
	cases := map[string]Shape{
		"":                ShapeForeign,
		"*":               ShapeForeign,
		"\xfe":            ShapeForeign,
		"\xfel":           ShapeForeign, // a lease has a full token
		ph:                ShapePlaceholder,
		ph + mark:         ShapePlaceholderMarked,
		ph + ver:          ShapePlaceholderKept,
		ph + ver + mark:   ShapePlaceholderKeptMarked,
		ph + "x":          ShapeForeign,
		ph + ver + "x":    ShapeForeign,
		ph + ver + ver:    ShapeForeign,
		"\xfev" + ver:     ShapeTombstone,
		"\xfev" + ver[1:]: ShapeForeign,
		"\xfec":           ShapeForeign,
		`{"id":1}`:        ShapeForeign,
		strings.Repeat("x", PlaceholderKeptMarkedSize): ShapeForeign,
	}
	for in, want := range cases {
		if got := Classify([]byte(in)); got != want {
			t.Errorf("Classify(%q) = %v, want %v", in, got, want)
		}
	}
	if Classify(nil) != ShapeAbsent {
		t.Error("nil is not absent")
	}
	if got := Classify(AppendEnvelope(nil, FlagNull, 0, time.Now(), 0, nil)); got != ShapeNullEnvelope {
		t.Errorf("null envelope classified %v", got)
	}
	for _, bad := range [][]byte{
		[]byte("\xfec"),
		AppendEnvelope(nil, 0x80, 0, time.Now(), 0, nil),             // a flag from a newer writer
		AppendEnvelope(nil, FlagNull, 0, time.Now(), 0, []byte("x")), // a null entry with a payload
	} {
		if _, ok := DecodeEnvelope(bad); ok {
			t.Errorf("%q decoded", bad)
		}
		if s := Classify(bad); s != ShapeForeign {
			t.Errorf("%q classified %v", bad, s)
		}
	}
	if v, ok := TombstoneVersion(AppendTombstone(nil, 5)); !ok || v != 5 {
		t.Errorf("tombstone version %d, %v", v, ok)
	}
	p, ok := ParsePlaceholder([]byte(ph + ver + mark))
	if !ok || !p.Kept || p.Version != 5 || !p.Marked || string(p.Base) != ph {
		t.Errorf("placeholder parts %+v, %v", p, ok)
	}
}

// Any bytes: decoding never panics, and what decodes is consistent.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte("\xfec\x01\x00"))
	f.Add(AppendEnvelope(nil, FlagNull, 1, time.Now(), time.Second, nil))
	f.Add(AppendEnvelope(nil, 0, 1, time.Now(), time.Second, []byte(`"x"`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := DecodeEnvelope(b)
		s := Classify(b)
		if ok != (s == ShapeEnvelope || s == ShapeNullEnvelope) || ok && len(e.Header) != HeaderSize {
			t.Fatalf("%q: decoded %v but classified %v", b, ok, s)
		}
		ParsePlaceholder(b)
		ParseHeader(b)
		TombstoneVersion(b)
	})
}

// A load shorter than the envelope's millisecond resolution is not recorded
// as free: a recorded delta of 0 would turn early refresh off for the entry
// whatever its beta.
func TestEnvelopeKeepsSubMillisecondLoadTime(t *testing.T) {
	for _, d := range []time.Duration{300 * time.Microsecond, time.Millisecond + time.Nanosecond} {
		env, ok := DecodeEnvelope(AppendEnvelope(nil, 0, 0, time.Now().Add(time.Hour), d, []byte("v")))
		if !ok || env.Delta < d.Truncate(time.Millisecond) || env.Delta == 0 {
			t.Errorf("delta %v recorded as %v (ok %v), want a whole millisecond count that is not 0", d, env.Delta, ok)
		}
	}
	if env, _ := DecodeEnvelope(AppendEnvelope(nil, 0, 0, time.Now().Add(time.Hour), 0, []byte("v"))); env.Delta != 0 {
		t.Errorf("no load recorded as %v", env.Delta)
	}
}

// The Lua prelude has every name replaced by its constant, and each
// definition is named once.
func TestLuaHasNoPlaceholderName(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range prelude {
		if strings.Contains(d.code, "$") {
			t.Fatalf("unreplaced name in the Lua prelude:\n%s", d.code)
		}
		if d.name == "" || seen[d.name] || !strings.Contains(d.code, d.name) {
			t.Fatalf("definition %q named twice or not at all:\n%s", d.name, d.code)
		}
		seen[d.name] = true
	}
	if want := strings.Count(luaTemplate, "\n--\n"); len(prelude) != want {
		t.Fatalf("%d definitions in the prelude, want luaTemplate's %d", len(prelude), want)
	}
}

// A script carries the definitions it names, and those they name, and no
// other.
func TestLuaCarriesWhatTheScriptUses(t *testing.T) {
	got := Lua("return owns(redis.call('GET', KEYS[1]), ARGV[1])")
	for _, want := range []string{"local function owns(", "local function placeholder(", "local WAIT_MARK ="} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"is_envelope", "next_nonce", "version_of", "HEADER_SIZE"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("script carries %q, which it does not use:\n%s", unwanted, got)
		}
	}
	if got := Lua("return 1"); got != "return 1" {
		t.Errorf("a script naming nothing of the prelude got %q", got)
	}
}
