package entry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
)

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

type row struct {
	ID   int
	Name string
}

// Any bytes: what decodes as an envelope is read by the read path as one, and
// decoding its payload never panics.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte("\xfec\x01\x00"))
	f.Add(wire.AppendEnvelope(nil, wire.FlagNull, 1, time.Now(), time.Second, nil))
	f.Add(wire.AppendEnvelope(nil, 0, 1, time.Now(), time.Second, []byte(`"x"`)))
	f.Add(wire.AppendEnvelope(nil, wire.FlagCompressed, 1, time.Now(), time.Second, []byte(`"x"`)))
	format := New(Config[row]{Codec: jsonCodec{}}, &telemetry.Recorder{}, nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, ok := wire.DecodeEnvelope(b)
		if ok && Classify(b) != Envelope {
			t.Fatalf("decoded %q but Classify says %v", b, Classify(b))
		}
		format.Decode("k", b) // must not panic
	})
}
