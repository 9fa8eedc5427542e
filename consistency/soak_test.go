package consistency

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The soak: readers, writers and row deletes on a few keys against a
// database whose reads go to a replica lagging up to soakLag behind. Writers
// either use Update (delete, write, delete again soakDelay later) or only its
// first half (delete, write). A read is stale when it returns a state that
// had been replaced before the read began; its staleness is how long before.
// After the writes stop and the delay passes, every key read through the
// cache must equal the database with the double delete.
const (
	soakKeys     = 8
	soakReaders  = 6
	soakWriters  = 3
	soakLag      = 10 * time.Millisecond
	soakDelay    = 50 * time.Millisecond
	soakDuration = 1500 * time.Millisecond
)

type soakResult struct {
	reads, stale, writes int64
	maxStale             time.Duration
	diverged             int // keys whose cached value differs from the database at the end
}

func TestSoakStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	for _, mode := range []struct {
		name   string
		double bool
	}{{"single_delete", false}, {"double_delete", true}} {
		t.Run(mode.name, func(t *testing.T) {
			r := soak(t, mode.double)
			t.Logf("%s: %d reads, %d writes, %d stale reads (%.3f%%), max staleness %v, %d of %d keys stale at the end",
				mode.name, r.reads, r.writes, r.stale, 100*float64(r.stale)/float64(max(r.reads, 1)),
				r.maxStale.Round(time.Millisecond), r.diverged, soakKeys)
			if mode.double && r.diverged != 0 {
				t.Fatalf("%d keys still differ from the database after the second deletes", r.diverged)
			}
		})
	}
}

func soak(t *testing.T, double bool) soakResult {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	c := newCache[int](t, rdb, cache.WithTTL(time.Hour), cache.WithNullTTL(time.Hour), cache.WithWait(5*time.Second))
	w := newDrainWatch()
	q := newQueue(t, rdb, WithDelay(soakDelay), withHooks(hooks{afterDrain: w.hook}))
	users := register(t, q, "users", c)
	d := newDB()
	for k := range soakKeys {
		d.write(itoa(k), false, time.Now(), 0)
	}
	load := func(_ context.Context, key string) (int, error) {
		v, ok := d.replica(key, time.Now())
		if !ok {
			return 0, cache.ErrNotFound
		}
		return v, nil
	}

	var res soakResult
	var mu sync.Mutex // guards res.maxStale
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range soakReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := itoa(rng.IntN(soakKeys))
				start := time.Now()
				v, err := c.Get(ctx, key, load)
				if err != nil && !errors.Is(err, cache.ErrNotFound) {
					t.Error(err)
					return
				}
				atomic.AddInt64(&res.reads, 1)
				if stale, age := d.judge(key, v, err == nil, start); stale {
					atomic.AddInt64(&res.stale, 1)
					mu.Lock()
					res.maxStale = max(res.maxStale, age)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range soakWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := itoa(rng.IntN(soakKeys))
				del := rng.IntN(5) == 0 // one write in five deletes the row
				lag := time.Duration(rng.Int64N(int64(soakLag)))
				write := func(context.Context) error {
					d.write(key, del, time.Now(), lag)
					return nil
				}
				var err error
				if double {
					err = users.Update(ctx, []string{key}, write)
				} else if err = users.Delete(ctx, key); err == nil {
					err = write(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				atomic.AddInt64(&res.writes, 1)
				// Pace the writers (load shaping, not synchronisation).
				time.Sleep(5*time.Millisecond + time.Duration(rng.Int64N(int64(25*time.Millisecond))))
			}
		}()
	}
	time.Sleep(soakDuration) // the soak's length
	close(stop)
	wg.Wait()

	// Let the recorded second deletes run (they are due soakDelay after the
	// last writes), then compare.
	w.wait(t, func() bool {
		n, err := q.Pending(ctx)
		return err == nil && n == 0
	}, "queue drained")
	for k := range soakKeys {
		key := itoa(k)
		v, err := c.Get(ctx, key, load)
		want, exists := d.primary(key)
		if exists != (err == nil) || (exists && v != want) {
			res.diverged++
		}
	}
	return res
}

// judge tells whether a read that began at start and returned (ver, exists)
// was stale, and if so how long before start that state had been replaced.
// A state committed at or after start counts as fresh: the read overlapped
// its write.
func (d *db) judge(key string, ver int, exists bool, start time.Time) (bool, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.rows[key]
	matches := func(s state) bool {
		if !exists {
			return s.deleted
		}
		return !s.deleted && s.ver == ver
	}
	cur := -1 // the state current when the read began
	for i, s := range h {
		if !s.commit.After(start) {
			cur = i
		}
	}
	for i := max(cur, 0); i < len(h); i++ {
		if matches(h[i]) {
			return false, 0
		}
	}
	for i := cur - 1; i >= 0; i-- {
		if matches(h[i]) {
			return true, start.Sub(h[i+1].commit)
		}
	}
	return true, start.Sub(h[0].commit) // matches nothing: count it from the first write
}
