package bloom

import (
	"context"
	"encoding/binary"
	"math"
	"math/bits"

	bbloom "github.com/bits-and-blooms/bloom/v3"
)

// A Local filter as the in-process copy of a shared bitmap (Fleet): bits set
// by offset as an add message lists them, and the whole filter replaced by
// a bitmap read from Redis, whose bit i is SETBIT offset i (the most
// significant bit of byte i/8 first), where a bits-and-blooms filter keeps
// bit i as bit i%64 of word i/64.

// setOffsets sets the bits at packed, big-endian uint32 offsets (below m).
func (l *Local) setOffsets(packed string) {
	if len(packed) < 4 {
		return
	}
	l.mu.Lock()
	b := l.f.BitSet()
	for i := 0; i+4 <= len(packed); i += 4 {
		if o := uint64(binary.BigEndian.Uint32([]byte(packed[i : i+4]))); o < l.p.M {
			b.Set(uint(o))
		}
	}
	l.mu.Unlock()
}

// fromBitmap returns the filter of the Redis bitmap bm (of m bits; a shorter
// one is zeros past its end).
func (p Params) fromBitmap(bm []byte) *bbloom.BloomFilter {
	words := make([]uint64, (p.M+63)/64)
	for j, c := range bm {
		if c == 0 || uint64(j)*8 >= p.M {
			continue
		}
		words[j/8] |= uint64(bits.Reverse8(c)) << (8 * (j % 8))
	}
	return bbloom.FromWithM(words, uint(p.M), p.K)
}

// replace makes f the serving filter, ready or not.
func (l *Local) replace(f *bbloom.BloomFilter, ready bool) {
	l.mu.Lock()
	l.f = f
	l.mu.Unlock()
	l.ready.Store(ready)
}

// FalsePositiveRate estimates the rate at which the filter answers "may
// contain" for a key never added, from how full it is: (ones/m)^k. It
// drifts up as keys of deleted rows stay in; a Rebuild brings it down.
func (l *Local) FalsePositiveRate() float64 {
	r, _ := l.FillRatio(context.Background()) // never fails
	return math.Pow(r, float64(l.p.K))
}
