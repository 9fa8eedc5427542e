package cache

import (
	"bytes"
	"testing"
	"time"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123)
	b := appendEnvelope(nil, flagStale, 42, exp, 1500*time.Millisecond, []byte("payload"))
	if classify(b) != kindEnvelope {
		t.Fatal("not classified as an envelope")
	}
	e, ok := decodeEnvelope(b)
	if !ok || e.version != 42 || !e.expiry.Equal(exp) || e.delta != 1500*time.Millisecond ||
		e.flags != flagStale || string(e.payload) != "payload" || len(e.header) != headerSize {
		t.Fatalf("decoded %+v, %v", e, ok)
	}
	// Two fills of the same value never share a header (the nonce differs).
	b2 := appendEnvelope(nil, flagStale, 42, exp, 1500*time.Millisecond, []byte("payload"))
	if bytes.Equal(b[:headerSize], b2[:headerSize]) {
		t.Fatal("two envelopes share a header")
	}
}

func TestClassify(t *testing.T) {
	ph := placeholder([16]byte{1})
	cases := map[string]kind{
		"":         kindForeign,
		"*":        kindForeign,
		"\xfe":     kindForeign,
		"\xfel":    kindForeign, // a lease has a full token
		ph:         kindLease,
		ph + "x":   kindForeign,
		"\xfec":    kindEnvelope, // decodes as nothing, see below
		`{"id":1}`: kindForeign,
	}
	for in, want := range cases {
		if got := classify([]byte(in)); got != want {
			t.Errorf("classify(%q) = %v, want %v", in, got, want)
		}
	}
	if _, ok := decodeEnvelope([]byte("\xfec")); ok {
		t.Fatal("short envelope decoded")
	}
	bad := appendEnvelope(nil, 0x80, 0, time.Now(), 0, nil)
	if _, ok := decodeEnvelope(bad); ok {
		t.Fatal("unknown flag accepted")
	}
	nullWithPayload := appendEnvelope(nil, flagNull, 0, time.Now(), 0, []byte("x"))
	if _, ok := decodeEnvelope(nullWithPayload); ok {
		t.Fatal("null envelope with a payload accepted")
	}
}

// Any bytes: decoding never panics, and what decodes is consistent.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte("\xfec\x01\x00"))
	f.Add(appendEnvelope(nil, flagNull, 1, time.Now(), time.Second, nil))
	f.Add(appendEnvelope(nil, 0, 1, time.Now(), time.Second, []byte(`"x"`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := decodeEnvelope(b)
		if ok && (classify(b) != kindEnvelope || len(e.header) != headerSize) {
			t.Fatalf("decoded %q but classify says %v", b, classify(b))
		}
		vc := newValueCodec[user](JSONCodec{})
		if ok && !e.null() {
			vc.decode(e.payload) // must not panic
		}
	})
}

// A load shorter than the envelope's millisecond resolution is not recorded
// as free: a recorded delta of 0 would turn early refresh off for the entry
// whatever its beta.
func TestEnvelopeKeepsSubMillisecondLoadTime(t *testing.T) {
	for _, d := range []time.Duration{300 * time.Microsecond, time.Millisecond + time.Nanosecond} {
		env, ok := decodeEnvelope(appendEnvelope(nil, 0, 0, time.Now().Add(time.Hour), d, []byte("v")))
		if !ok || env.delta < d.Truncate(time.Millisecond) || env.delta == 0 {
			t.Errorf("delta %v recorded as %v (ok %v), want a whole millisecond count that is not 0", d, env.delta, ok)
		}
	}
	if env, _ := decodeEnvelope(appendEnvelope(nil, 0, 0, time.Now().Add(time.Hour), 0, []byte("v"))); env.delta != 0 {
		t.Errorf("no load recorded as %v", env.delta)
	}
}
