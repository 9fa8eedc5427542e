package main

import (
	"container/heap"
	"fmt"
	"sort"
	"time"
)

// Sizes in powers of four from 64 B; TTLs in the steps an operator thinks in.
var (
	sizeBounds = []int64{64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}
	ttlBounds  = []int64{0, 1000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000}
)

// histogram counts values into buckets [bounds[i-1], bounds[i]), plus one
// open bucket past the last bound.
type histogram struct {
	bounds []int64
	label  func(lo, hi int64, last bool) string
	count  []int64
	bytes  []int64
}

func newHistogram(bounds []int64, label func(lo, hi int64, last bool) string) *histogram {
	return &histogram{bounds: bounds, label: label, count: make([]int64, len(bounds)+1), bytes: make([]int64, len(bounds)+1)}
}

func (h *histogram) add(v, size int64) {
	i := sort.Search(len(h.bounds), func(i int) bool { return v < h.bounds[i] })
	h.count[i]++
	h.bytes[i] += size
}

func (h *histogram) buckets() []Bucket {
	out := make([]Bucket, 0, len(h.count))
	for i, n := range h.count {
		var lo, hi int64
		if i > 0 {
			lo = h.bounds[i-1]
		}
		last := i == len(h.bounds)
		if !last {
			hi = h.bounds[i]
		}
		out = append(out, Bucket{Label: h.label(lo, hi, last), Below: hi, Count: n, Bytes: h.bytes[i]})
	}
	return out
}

func sizeLabel(lo, hi int64, last bool) string {
	if last {
		return "≥ " + humanBytes(lo)
	}
	return "< " + humanBytes(hi)
}

func ttlLabel(lo, hi int64, last bool) string {
	switch {
	case hi == 0 && !last:
		return "no expiry"
	case last:
		return "≥ " + time.Duration(lo*int64(time.Millisecond)).String()
	}
	return "< " + time.Duration(hi*int64(time.Millisecond)).String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// topKeys keeps the n biggest keys in a min-heap.
type topKeys struct {
	n int
	h bigHeap
}

func newTopKeys(n int) *topKeys { return &topKeys{n: n} }

func (t *topKeys) add(k BigKey) {
	if t.n <= 0 {
		return
	}
	if len(t.h) < t.n {
		heap.Push(&t.h, k)
		return
	}
	if k.Bytes > t.h[0].Bytes {
		t.h[0] = k
		heap.Fix(&t.h, 0)
	}
}

func (t *topKeys) sorted() []BigKey {
	out := append([]BigKey(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}

type bigHeap []BigKey

func (h bigHeap) Len() int           { return len(h) }
func (h bigHeap) Less(i, j int) bool { return h[i].Bytes < h[j].Bytes }
func (h bigHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bigHeap) Push(x any)        { *h = append(*h, x.(BigKey)) }
func (h *bigHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
