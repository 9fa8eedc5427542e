package benchmarks

import (
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	cgmsgpack "github.com/cacheguard/cacheguard/codec/msgpack"
)

// BenchmarkCodec measures the codecs cache ships for a typical row, and the
// MessagePack codec of codec/msgpack: encode+decode of one value.
func BenchmarkCodec(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec cache.Codec
	}{{"json", cache.JSONCodec{}}, {"gob", cache.GobCodec{}}, {"msgpack", cgmsgpack.Codec{}}} {
		b.Run("codec="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := c.codec.Marshal(sampleRow)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
				var r row
				if err := c.codec.Unmarshal(data, &r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "bytes/value")
		})
	}
}
