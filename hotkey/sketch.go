package hotkey

import "math"

// sketchDepth is the number of rows. Two rows give a heavy key two chances to
// own a bucket; more rows cost a cache miss each on every Record for little
// gain at the sizes used here.
const sketchDepth = 2

// decayBase is HeavyKeeper's b: a bucket holding count c is decayed by a
// colliding key with probability decayBase^-c.
const decayBase = 1.08

// decayOdds[c] is decayBase^-c scaled to 2^32, compared with a random uint32.
// Beyond the table the probability is below 2^-32, i.e. zero.
var decayOdds = func() []uint32 {
	var t []uint32
	for c := 0; ; c++ {
		p := math.Pow(decayBase, -float64(c)) * (1 << 32)
		if p < 1 {
			return t
		}
		t = append(t, uint32(math.Min(p, math.MaxUint32)))
	}
}()

// bucket is one sketch cell: the fingerprint of the key that owns it and that
// key's estimated count. count 0 means empty.
type bucket struct {
	fp    uint32
	count uint32
}

// sketch is one shard's HeavyKeeper. It is guarded by the shard's mutex.
type sketch struct {
	buckets []bucket // sketchDepth rows of width buckets
	shift   uint     // 64 - log2(width): the top bits of a mixed hash index a row
	rng     uint64   // xorshift state for the decay coin
	// live is false when every count is known to be zero: scale then has
	// nothing to do, so an idle detector's ticks do not walk the buckets.
	live bool
}

func newSketch(width int, seed uint64) sketch {
	bits := uint(0)
	for 1<<bits < width {
		bits++
	}
	return sketch{
		buckets: make([]bucket, sketchDepth<<bits),
		shift:   64 - bits,
		rng:     seed | 1,
	}
}

// mix is the splitmix64 finalizer; it turns one key hash into independent
// looking row indexes.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fingerprint is what a bucket remembers of its key; zero is kept for empty.
func fingerprint(h uint64) uint32 {
	if fp := uint32(h); fp != 0 {
		return fp
	}
	return 1
}

// index is the position of the key with hash h in the given row.
func (s *sketch) index(h, row uint64) uint64 {
	return row<<(64-s.shift) + mix(h+(row+1)*0x9e3779b97f4a7c15)>>s.shift
}

func (s *sketch) coin() uint32 {
	x := s.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	s.rng = x
	return uint32((x * 0x2545f4914f6cdd1d) >> 32)
}

// add counts one access of the key with hash h and returns the key's estimate:
// the largest count among the buckets it owns.
func (s *sketch) add(h uint64) uint32 {
	fp := fingerprint(h)
	s.live = true
	var est uint32
	for row := uint64(0); row < sketchDepth; row++ {
		b := &s.buckets[s.index(h, row)]
		switch {
		case b.count == 0:
			b.fp, b.count = fp, 1
		case b.fp == fp:
			if b.count < math.MaxUint32 {
				b.count++
			}
		case b.count < uint32(len(decayOdds)) && s.coin() < decayOdds[b.count]:
			b.count--
			if b.count == 0 {
				b.fp, b.count = fp, 1
			}
		default:
			continue
		}
		if b.fp == fp && b.count > est {
			est = b.count
		}
	}
	return est
}

// scale multiplies every count by num/2^16, so that the sketch forgets old
// traffic at the pace the window slides.
func (s *sketch) scale(num uint64) {
	if !s.live {
		return
	}
	var any uint32
	for i := range s.buckets {
		b := &s.buckets[i]
		b.count = uint32(uint64(b.count) * num >> 16)
		any |= b.count
	}
	s.live = any != 0
}

// clamp lowers the key's buckets to at most limit. The shard calls it with a
// tracked key's exact window count, so that a key that cooled and was dropped
// is not later readmitted on the strength of traffic that left the window.
func (s *sketch) clamp(h uint64, limit uint64) {
	fp := fingerprint(h)
	for row := uint64(0); row < sketchDepth; row++ {
		b := &s.buckets[s.index(h, row)]
		if b.fp == fp && uint64(b.count) > limit {
			b.count = uint32(limit)
		}
	}
}
