package benchmarks

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// order is a realistic cached row for the compression measurement: an order
// with its customer and items, the kind of aggregate that grows into a big key.
type order struct {
	ID        int64       `json:"id"`
	Status    string      `json:"status"`
	CreatedAt string      `json:"created_at"`
	Customer  customer    `json:"customer"`
	Items     []orderItem `json:"items"`
	Notes     string      `json:"notes"`
}

type customer struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Email   string `json:"email"`
	Address string `json:"address"`
}

type orderItem struct {
	SKU      string  `json:"sku"`
	Title    string  `json:"title"`
	Qty      int     `json:"qty"`
	Price    float64 `json:"price"`
	Category string  `json:"category"`
}

var (
	words      = []string{"wireless", "mouse", "keyboard", "ergonomic", "usb-c", "cable", "monitor", "stand", "laptop", "sleeve", "black", "white", "pro", "mini", "bundle", "pack", "of", "2", "steel", "bamboo"}
	categories = []string{"electronics", "office", "accessories", "home", "books"}
	statuses   = []string{"paid", "shipped", "delivered", "refunded"}
)

func phrase(r *rand.Rand, n int) string {
	s := ""
	for i := 0; i < n; i++ {
		if i > 0 {
			s += " "
		}
		s += words[r.IntN(len(words))]
	}
	return s
}

// orderPayloads returns JSON lists of orders of roughly 2 KiB, 20 KiB and
// 200 KiB: what a repository returns for one order, a page, and a report.
func orderPayloads() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	mk := func(n int) []byte {
		os := make([]order, n)
		for i := range os {
			o := order{
				ID: r.Int64N(1e9), Status: statuses[r.IntN(len(statuses))],
				CreatedAt: fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60)),
				Customer: customer{ID: r.Int64N(1e7), Name: phrase(r, 2), Email: fmt.Sprintf("user%d@example.com", r.IntN(1e6)),
					Address: fmt.Sprintf("%d %s street, %s", r.IntN(999), phrase(r, 1), phrase(r, 1))},
				Notes: phrase(r, r.IntN(12)),
			}
			for j := 0; j < 1+r.IntN(8); j++ {
				o.Items = append(o.Items, orderItem{SKU: fmt.Sprintf("SKU-%06d", r.IntN(1e6)), Title: phrase(r, 4),
					Qty: 1 + r.IntN(5), Price: float64(r.IntN(100000)) / 100, Category: categories[r.IntN(len(categories))]})
			}
			os[i] = o
		}
		b, _ := json.Marshal(os)
		return b
	}
	return map[string][]byte{"2KiB": mk(3), "20KiB": mk(30), "200KiB": mk(300)}
}

// BenchmarkCompress measures compress+decompress of JSON payloads with the
// candidates for the cache's compression (klauspost/compress s2 and zstd),
// reporting the ratio as a metric.
func BenchmarkCompress(b *testing.B) {
	payloads := orderPayloads()
	zfast, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	zdef, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	zdec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	codecs := []struct {
		name string
		enc  func(dst, src []byte) []byte
		dec  func(dst, src []byte) ([]byte, error)
	}{
		{"s2", s2.Encode, s2.Decode},
		{"s2-better", s2.EncodeBetter, s2.Decode},
		{"zstd-fastest", func(dst, src []byte) []byte { return zfast.EncodeAll(src, dst[:0]) }, func(dst, src []byte) ([]byte, error) { return zdec.DecodeAll(src, dst[:0]) }},
		{"zstd-default", func(dst, src []byte) []byte { return zdef.EncodeAll(src, dst[:0]) }, func(dst, src []byte) ([]byte, error) { return zdec.DecodeAll(src, dst[:0]) }},
	}
	for _, size := range []string{"2KiB", "20KiB", "200KiB"} {
		p := payloads[size]
		for _, c := range codecs {
			b.Run(fmt.Sprintf("size=%s/codec=%s", size, c.name), func(b *testing.B) {
				b.SetBytes(int64(len(p)))
				var z, out []byte
				for b.Loop() {
					z = c.enc(z[:cap(z)], p)
					var err error
					if out, err = c.dec(out[:cap(out)], z); err != nil || len(out) != len(p) {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(p))/float64(len(z)), "ratio")
			})
		}
	}
}
