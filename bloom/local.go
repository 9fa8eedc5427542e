package bloom

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	bbloom "github.com/bits-and-blooms/bloom/v3"
)

// Local is an in-process Bloom filter, safe for concurrent use. Tests take a
// read lock only, so readers never wait for one another or for a rebuild's
// work, only for concurrent Adds.
//
// A Local filter serves one process. With several processes each keeps its
// own copy, and a key added in one is missing from the others: use Redis
// instead, or add every key in every process.
type Local struct {
	p     Params
	n     uint // expected keys, for progress reports
	cfg   config
	ready atomic.Bool

	// mu guards f, the serving filter.
	mu sync.RWMutex
	f  *bbloom.BloomFilter

	// nmu guards next, the filter a Rebuild is filling (nil when none is).
	// Add holds nmu across its write to f and to next, and the swap holds
	// it too, so an Add lands either in both or in the swapped-in filter.
	// Lock order: nmu, then mu.
	nmu  sync.Mutex
	next *bbloom.BloomFilter
}

// NewLocal returns an empty, not yet ready Local filter sized for n keys at
// false-positive rate fp. Fill it with Rebuild (or MarkReady if there are no
// keys yet); until then MayContain answers true for every key.
func NewLocal(n uint, fp float64, opts ...Option) (*Local, error) {
	p, err := Estimate(n, fp)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(partLocal, opts)
	if err != nil {
		return nil, err
	}
	return newLocal(p, n, bbloom.New(uint(p.M), p.K), cfg), nil
}

func newLocal(p Params, n uint, f *bbloom.BloomFilter, cfg config) *Local {
	return &Local{p: p, n: n, cfg: cfg, f: f}
}

// Params returns the filter's size and number of hash functions.
func (l *Local) Params() Params { return l.p }

// Ready reports whether the filter has been filled (by Rebuild, by loading a
// snapshot of a ready filter, or by MarkReady).
func (l *Local) Ready() bool { return l.ready.Load() }

// MarkReady declares the filter complete without a Rebuild, for a data set
// that starts empty and whose every insert goes through Add.
func (l *Local) MarkReady() { l.ready.Store(true) }

// MayContain reports whether key may have been added; false is definite. It
// answers true while the filter is not ready. It never fails.
func (l *Local) MayContain(_ context.Context, key string) (bool, error) {
	if !l.ready.Load() {
		return true, nil
	}
	l.mu.RLock()
	ok := l.f.TestString(key)
	l.mu.RUnlock()
	return ok, nil
}

// MayContainMany is MayContain for several keys; out[i] answers keys[i].
func (l *Local) MayContainMany(_ context.Context, keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	if !l.ready.Load() {
		for i := range out {
			out[i] = true
		}
		return out, nil
	}
	l.mu.RLock()
	for i, k := range keys {
		out[i] = l.f.TestString(k)
	}
	l.mu.RUnlock()
	return out, nil
}

// Add records keys. During a Rebuild they go into the new filter as well. It
// never fails.
func (l *Local) Add(_ context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	l.nmu.Lock()
	defer l.nmu.Unlock()
	l.mu.Lock()
	for _, k := range keys {
		l.f.AddString(k)
	}
	l.mu.Unlock()
	if l.next != nil {
		for _, k := range keys {
			l.next.AddString(k)
		}
	}
	return nil
}

// Rebuild fills a fresh filter with every key of src while the current one
// keeps serving, then swaps it in and marks the filter ready. Keys passed to
// Add from the moment Rebuild is called are kept too, so src may be a scan
// that started after the call. While it runs the process holds two filters
// (2·m/8 bytes). On error (from src or ctx) the serving filter is left as it
// was. A second Rebuild while one runs returns ErrRebuildInProgress.
func (l *Local) Rebuild(ctx context.Context, src iter.Seq2[string, error]) error {
	next := bbloom.New(uint(l.p.M), l.p.K)
	l.nmu.Lock()
	if l.next != nil {
		l.nmu.Unlock()
		return ErrRebuildInProgress
	}
	l.next = next
	l.nmu.Unlock()

	_, err := feed(ctx, src, &l.cfg, l.n, func(batch []string) error {
		l.nmu.Lock()
		for _, k := range batch {
			next.AddString(k)
		}
		l.nmu.Unlock()
		return nil
	})

	l.nmu.Lock()
	defer l.nmu.Unlock()
	l.next = nil
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.f = next
	l.mu.Unlock()
	l.ready.Store(true)
	return nil
}
