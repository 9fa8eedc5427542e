package cache

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// Any bytes: what decodes as an envelope is read by the read path as one, and
// decoding its payload never panics.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte("\xfec\x01\x00"))
	f.Add(wire.AppendEnvelope(nil, wire.FlagNull, 1, time.Now(), time.Second, nil))
	f.Add(wire.AppendEnvelope(nil, 0, 1, time.Now(), time.Second, []byte(`"x"`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := decodeEnvelope(b)
		if ok && classify(b) != kindEnvelope {
			t.Fatalf("decoded %q but classify says %v", b, classify(b))
		}
		vc := newValueCodec[user](JSONCodec{})
		if ok && !e.Null() {
			vc.decode(e.Payload) // must not panic
		}
	})
}
