package bloom

import (
	"context"
	"iter"
	"math/rand/v2"
	"strconv"
	"testing"
)

// keysFrom yields keys as a rebuild source.
func keysFrom(keys []string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, k := range keys {
			if !yield(k, nil) {
				return
			}
		}
	}
}

// present returns n row keys.
func present(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// absent returns n random keys from a seeded generator, none of which can be
// among present's (different prefix). The keys share one backing string:
// building a million of them one by one is most of a test's time under -race.
func absent(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, 0, n*24)
	ends := make([]int, n)
	for i := range ends {
		buf = append(buf, "absent:"...)
		buf = strconv.AppendUint(buf, rng.Uint64(), 16)
		ends[i] = len(buf)
	}
	all := string(buf)
	out := make([]string, n)
	start := 0
	for i, end := range ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// redisLayout renders a Local filter's bits the way Redis stores a bitmap:
// SETBIT offset i is bit 7-i%8 of byte i/8.
func redisLayout(l *Local) []byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]byte, (l.p.M+7)/8)
	bs := l.f.BitSet()
	for i := uint64(0); i < l.p.M; i++ {
		if bs.Test(uint(i)) {
			out[i/8] |= 0x80 >> (i % 8)
		}
	}
	return out
}

func mustLocal(t testing.TB, n uint, fp float64, opts ...Option) *Local {
	t.Helper()
	l, err := NewLocal(n, fp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustRebuild(t testing.TB, f interface {
	Rebuild(context.Context, iter.Seq2[string, error]) error
}, keys []string) {
	t.Helper()
	if err := f.Rebuild(context.Background(), keysFrom(keys)); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
}

// fpRate counts how many of probes f reports as possibly present.
func fpRate(t testing.TB, f interface {
	MayContainMany(context.Context, []string) ([]bool, error)
}, probes []string) float64 {
	t.Helper()
	got, err := f.MayContainMany(context.Background(), probes)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, ok := range got {
		if ok {
			hits++
		}
	}
	return float64(hits) / float64(len(probes))
}
