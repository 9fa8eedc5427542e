package benchmarks

import (
	"flag"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Shared inputs: the same keys and the same zipfian trace for every library.

const (
	zipfKeys = 100_000 // distinct rows read by the zipfian workload
	zipfS    = 1.1     // zipf exponent
	traceLen = 1 << 20 // accesses in the precomputed trace
)

// quick reports whether this is a smoke run (-benchtime below 10x, or
// -short): the scenarios then shrink their data and their time windows so
// that the whole suite finishes in seconds. Figures from a quick run mean
// nothing; it only proves that every benchmark runs.
func quick() bool {
	if testing.Short() {
		return true
	}
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return false
	}
	n, ok := strings.CutSuffix(f.Value.String(), "x")
	if !ok {
		return false
	}
	v, err := strconv.Atoi(n)
	return err == nil && v < 10
}

// scaled returns full, or small in a quick run.
func scaled(full, small int) int {
	if quick() {
		return small
	}
	return full
}

var keyNames = sync.OnceValue(func() []string {
	names := make([]string, zipfKeys)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
})

// zipfTrace is a fixed sequence of row ids drawn from a zipf distribution
// (s = 1.1) over zipfKeys rows, id 0 the most frequent. Benchmarks walk it
// from different offsets in different goroutines, so every library sees the
// same accesses and no time goes into random number generation.
var zipfTrace = sync.OnceValue(func() []int32 {
	z := rand.NewZipf(rand.New(rand.NewSource(1)), zipfS, 1, zipfKeys-1)
	t := make([]int32, traceLen)
	for i := range t {
		t[i] = int32(z.Uint64())
	}
	return t
})

// traceWalker hands out the trace's keys from a starting offset.
type traceWalker struct {
	trace []int32
	names []string
	i     int
}

func newTraceWalker(start int) *traceWalker {
	t := zipfTrace()
	return &traceWalker{trace: t, names: keyNames(), i: start % len(t)}
}

func (w *traceWalker) next() string {
	k := w.names[w.trace[w.i]]
	w.i++
	if w.i == len(w.trace) {
		w.i = 0
	}
	return k
}

// parallel runs fn(0..n-1) on workers goroutines and waits for them.
func parallel(workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// walkerSeq gives each parallel goroutine its own region of the trace.
type walkerSeq struct {
	mu sync.Mutex
	n  int
}

func (s *walkerSeq) walker() *traceWalker {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return newTraceWalker(s.n * 7919 * 13)
}
