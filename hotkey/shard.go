package hotkey

import (
	"strings"
	"sync"
	"sync/atomic"
)

// shard owns the keys whose hash selects it. Everything in it is guarded by mu.
//
// Candidates are numbered 0..n-1. Candidate i's counters are the row
// counts[i*stride : (i+1)*stride]: the window's sum first, then one counter
// per tick of the ring. Keeping a row contiguous and the rows in one slab
// means counting an access to a tracked key touches two cache lines: its
// table slot and its row.
type shard struct {
	mu       sync.Mutex
	sk       sketch
	pos      int      // current tick of every ring in the shard
	total    []uint64 // all accesses per tick, tracked or not
	totalSum uint64
	index    table    // key hash -> candidate number
	hashes   []uint64 // candidate number -> key hash
	keys     []string // candidate number -> key
	counts   []uint64 // candidate rows
	stride   int      // 1 + ticks per window
	n        int      // live candidates
	// floor is at most the smallest candidate sum while the shard is full.
	// Candidate sums only grow between ticks, so a key whose estimate is not
	// above floor cannot displace anyone and no scan is needed.
	floor uint64
	// Keys promoted since the last tick (early.go), and the set the tick
	// in progress took, visible until it publishes its snapshot.
	early, earlyOld atomic.Pointer[earlySet]
	det             *Detector
	_               [64]byte // keep neighbouring shards' mutexes off this cache line
}

func (s *shard) init(slots, capacity, width int, seed uint64) {
	s.sk = newSketch(width, seed)
	s.total = make([]uint64, slots)
	s.index = newTable(capacity)
	s.hashes = make([]uint64, capacity)
	s.keys = make([]string, capacity)
	s.stride = 1 + slots
	s.counts = make([]uint64, capacity*s.stride)
}

// row returns candidate i's counters: [0] is the window's sum, [1+t] tick t.
func (s *shard) row(i int) []uint64 {
	return s.counts[i*s.stride : (i+1)*s.stride]
}

// record counts one access (in sampled units) of the key with hash h. track
// is false for keys the rules exclude: they only add to the total.
//
// A tracked key is identified by its 64-bit hash alone. With a random seed,
// two live keys sharing one is too unlikely to be worth a string comparison
// (and a cache miss) on every access; the cost would be one miscount.
//
// thr is the count at which a candidate is promoted between ticks: the access
// that brings its count to thr promotes it (early.go).
func (s *shard) record(key string, h uint64, track bool, thr uint64) {
	s.mu.Lock()
	s.total[s.pos]++
	s.totalSum++
	if !track {
		s.mu.Unlock()
		return
	}
	if i := s.index.get(h); i >= 0 {
		// A tracked key is counted exactly and skips the sketch: its
		// buckets only matter again if it is dropped, and then they are
		// clamped to its exact count.
		r := s.row(i)
		r[0]++
		r[1+s.pos]++
		if r[0] == thr {
			s.det.promoteEarly(s, s.keys[i])
		}
		s.mu.Unlock()
		return
	}
	// The sketch's estimate is 0 for a key whose buckets are all held by
	// heavier keys (a newcomer only decays them, with small odds); this
	// access still happened, and a candidate is counted exactly from here.
	est := max(uint64(s.sk.add(h)), 1)
	i := -1
	switch {
	case s.n < len(s.keys):
		i = s.admit(key, h, est)
	case est > s.floor:
		i = s.displace(key, h, est)
	}
	if i >= 0 && est >= thr {
		s.det.promoteEarly(s, s.keys[i])
	}
	s.mu.Unlock()
}

// admit makes key a candidate, crediting it with its sketch estimate: the
// accesses it had before it was tracked exactly. It returns the candidate's
// number.
func (s *shard) admit(key string, h uint64, est uint64) int {
	i := s.n
	s.n++
	s.hashes[i] = h
	// Clone so that Record's argument does not escape: callers may build keys
	// on the stack, and only admission pays for a copy.
	s.keys[i] = strings.Clone(key)
	r := s.row(i)
	clear(r)
	r[0], r[1+s.pos] = est, est
	s.index.set(h, i)
	return i
}

// displace replaces the smallest candidate with key if key's estimate is
// larger, and tightens floor either way. It returns key's candidate number,
// or -1 when key was not admitted.
func (s *shard) displace(key string, h uint64, est uint64) int {
	low, second, lowI := ^uint64(0), ^uint64(0), -1
	for i := range s.n {
		switch sum := s.counts[i*s.stride]; {
		case sum < low:
			second, low, lowI = low, sum, i
		case sum < second:
			second = sum
		}
	}
	if est <= low {
		s.floor = low
		return -1
	}
	s.evict(lowI)
	i := s.admit(key, h, est)
	s.floor = min(second, est)
	return i
}

// evict drops candidate i; the last candidate takes its number.
func (s *shard) evict(i int) {
	h := s.hashes[i]
	s.sk.clamp(h, s.counts[i*s.stride])
	s.index.del(h)
	last := s.n - 1
	if i != last {
		s.hashes[i], s.keys[i] = s.hashes[last], s.keys[last]
		copy(s.row(i), s.row(last))
		s.index.set(s.hashes[i], i)
	}
	s.keys[last] = ""
	s.n--
}

// advance slides the window by steps ticks, drops candidates that had no
// access within it, scales the sketch down by num/2^16, and appends the
// remaining candidates to out (counts in sampled units). It returns out, the
// shard's total accesses within the window and the keys promoted early since
// the last tick.
func (s *shard) advance(steps int, num uint64, out []Entry) ([]Entry, uint64, *earlySet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	early := s.takeEarly()
	slots := len(s.total)
	if steps >= slots {
		s.pos = (s.pos + steps) % slots
		clear(s.total)
		s.totalSum = 0
		clear(s.counts)
	} else {
		for range steps {
			s.pos = (s.pos + 1) % slots
			s.totalSum -= s.total[s.pos]
			s.total[s.pos] = 0
			for i := range s.n {
				r := s.row(i)
				r[0] -= r[1+s.pos]
				r[1+s.pos] = 0
			}
		}
	}
	if steps > 0 {
		s.sk.scale(num)
	}
	s.floor = ^uint64(0)
	for i := 0; i < s.n; {
		sum := s.counts[i*s.stride]
		if sum == 0 {
			s.evict(i) // the last candidate moves to i
			continue
		}
		s.sk.clamp(s.hashes[i], sum)
		s.floor = min(s.floor, sum)
		out = append(out, Entry{Key: s.keys[i], Count: sum})
		i++
	}
	if s.n < len(s.keys) {
		s.floor = 0
	}
	return out, s.totalSum, early
}
