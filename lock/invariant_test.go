//go:build unix

package lock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// envAcquisitions sets how many acquisitions the invariant tests make
// (default: a CI-sized run of a few seconds).
const envAcquisitions = "LOCK_INVARIANT_ACQUISITIONS"

func acquisitions(t *testing.T, def int) int {
	if v := os.Getenv(envAcquisitions); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q", envAcquisitions, v)
		}
		return n
	}
	return def
}

// TestNoOverlappingHolders is the lock's central invariant under faults:
// while the server is frozen (SIGSTOP) or pauses its clients (CLIENT
// PAUSE), replies arrive late, holders re-enter with other leases and extend
// them, no holder believes it holds a lock after the next holder got it.
func TestNoOverlappingHolders(t *testing.T) {
	s, _ := redistestSingle(t)
	runInvariant(t, []string{s.Addr}, false, []*frozen{freezer(t, s.Addr)}, acquisitions(t, 10000))
}

// TestNoOverlappingHoldersCluster is the same on a three-master cluster,
// freezing one master at a time.
func TestNoOverlappingHoldersCluster(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	var fs []*frozen
	for _, m := range cl.Masters {
		fs = append(fs, freezer(t, m.Addr))
	}
	runInvariant(t, cl.Addrs(), true, fs, acquisitions(t, 3000))
}

// runFor bounds an invariant run; minHistory is the fewest acquisitions
// worth checking.
const (
	runFor     = time.Minute
	minHistory = 100
)

// holdRecord is what one holder knew of its hold.
type holdRecord struct {
	token    int64
	acquired time.Time // Lock returned
	belief   time.Time // last moment the holder checked that it held the lock
	end      time.Time // the lock's end as the holder saw it: its last deadline or its Unlock
}

func runInvariant(t *testing.T, addrs []string, cluster bool, fs []*frozen, target int) {
	const (
		locks   = 64
		clients = 3
	)
	newRDB := func() redis.UniversalClient {
		var rdb redis.UniversalClient
		if cluster {
			rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		} else {
			rdb = redis.NewClient(&redis.Options{Addr: addrs[0]})
		}
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	cs := make([]*Client, clients)
	for i := range cs {
		rdb := newRDB()
		rnd := rand.New(rand.NewPCG(uint64(i), 7))
		rdb.AddHook(&lateReplies{rnd: rnd.Float64, max: 25 * time.Millisecond})
		cs[i] = newClient(t, rdb, WithPrefix("inv:"))
	}
	admin := newRDB()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The run ends at target acquisitions or at runFor, whichever comes
	// first: a slow or loaded machine checks a shorter history instead of
	// failing on throughput (which belongs in benchmarks) or running into
	// the test binary's timeout.
	end := time.Now().Add(runFor)
	var done atomic.Bool
	var acquired, refused, lost, freezes, pauses atomic.Int64
	records := make([][]holdRecord, locks)
	var mu sync.Mutex

	// The fault injector: freeze a server or pause its clients for up to
	// about two leases, now and then.
	var fwg sync.WaitGroup
	fwg.Add(1)
	go func() {
		defer fwg.Done()
		r := rand.New(rand.NewPCG(1, 1))
		for !done.Load() && os.Getenv("NOFAULT") == "" {
			time.Sleep(time.Duration(100+r.IntN(200)) * time.Millisecond)
			d := time.Duration(10+r.IntN(70)) * time.Millisecond
			if r.IntN(2) == 0 {
				f := fs[r.IntN(len(fs))]
				f.freeze()
				time.Sleep(d)
				f.resume()
				freezes.Add(1)
			} else {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				if cluster {
					admin.(*redis.ClusterClient).ForEachMaster(pctx, func(ctx context.Context, c *redis.Client) error {
						return c.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err()
					})
				} else {
					admin.Do(pctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL")
				}
				pcancel()
				time.Sleep(d)
				pauses.Add(1)
			}
		}
	}()

	lease := func(r *rand.Rand) []Option {
		d := time.Duration(20+r.IntN(60)) * time.Millisecond
		if r.IntN(2) == 0 {
			return []Option{WithLease(d), WithoutWatchdog()}
		}
		return []Option{WithLease(d)}
	}
	var wg sync.WaitGroup
	for l := 0; l < locks; l++ {
		name := fmt.Sprintf("inv-%d", l)
		for ci := 0; ci < clients; ci++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(l), uint64(ci)))
				c := cs[ci]
				for !done.Load() && time.Now().Before(end) {
					octx := ContextWithOwner(ctx, newOwner())
					lctx, lcancel := context.WithTimeout(octx, 300*time.Millisecond)
					var h *Handle
					var err error
					if r.IntN(4) == 0 {
						h, err = c.Mutex(name, lease(r)...).TryLock(lctx)
					} else {
						h, err = c.Mutex(name, lease(r)...).Lock(lctx)
					}
					lcancel()
					if err != nil {
						refused.Add(1)
						if os.Getenv("DBG") != "" && refused.Load()%200 == 0 {
							t.Logf("refused: %v", err)
						}
						continue
					}
					rec := holdRecord{token: h.Token(), acquired: time.Now()}
					handles := []*Handle{h}
					check := func() {
						d := h.Deadline()
						t0 := time.Now()
						if h.Err() == nil {
							rec.belief = t0
							if d.After(rec.end) {
								rec.end = d
							}
						}
					}
					check()
					if r.IntN(4) == 0 { // re-enter with another lease
						rctx, rcancel := context.WithTimeout(octx, 100*time.Millisecond)
						if h2, err := c.Mutex(name, lease(r)...).Lock(rctx); err == nil {
							handles = append(handles, h2)
						}
						rcancel()
						check()
					}
					if r.IntN(5) == 0 {
						ectx, ecancel := context.WithTimeout(ctx, 100*time.Millisecond)
						h.Extend(ectx, time.Duration(10+r.IntN(80))*time.Millisecond)
						ecancel()
						check()
					}
					for k := r.IntN(3); k > 0; k-- {
						time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond)
						check()
					}
					if h.Err() != nil {
						lost.Add(1)
					}
					uctx, ucancel := context.WithTimeout(ctx, 300*time.Millisecond)
					for i := len(handles) - 1; i >= 0; i-- {
						if i == 0 {
							if u := time.Now(); !rec.end.IsZero() && u.Before(rec.end) {
								rec.end = u
							}
						}
						handles[i].Unlock(uctx)
					}
					ucancel()
					mu.Lock()
					records[l] = append(records[l], rec)
					mu.Unlock()
					if acquired.Add(1) >= int64(target) {
						done.Store(true)
					}
				}
			}()
		}
	}
	wg.Wait()
	done.Store(true)
	fwg.Wait()
	if n := acquired.Load(); n < min(int64(target), minHistory) {
		t.Fatalf("only %d acquisitions in %v: too few to check", n, runFor)
	}
	t.Logf("%d acquisitions (%d attempts refused) on %d locks, %d leases lost, %d freezes, %d client pauses",
		acquired.Load(), refused.Load(), locks, lost.Load(), freezes.Load(), pauses.Load())

	overlaps := 0
	for l, recs := range records {
		slices.SortFunc(recs, func(a, b holdRecord) int { return compareInt(a.token, b.token) })
		for i := range recs {
			if i > 0 && recs[i].token == recs[i-1].token {
				t.Errorf("lock %d: two holds with token %d", l, recs[i].token)
			}
			a := recs[i]
			if a.belief.IsZero() {
				continue
			}
			for _, b := range recs[i+1:] {
				if b.acquired.Before(a.belief) || b.acquired.Before(a.end) {
					overlaps++
					if overlaps <= 5 {
						t.Errorf("lock %d: holder %d believed it held the lock %v after holder %d had it (deadline %v later)",
							l, a.token, a.belief.Sub(b.acquired), b.token, a.end.Sub(b.acquired))
					}
				}
			}
		}
	}
	if overlaps > 0 {
		t.Fatalf("%d overlapping holds", overlaps)
	}
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
