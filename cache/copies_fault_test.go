package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// dbRow is a database row that a loader reads.
type dbRow struct{ atomic.Value }

func dbRowOf(v string) *dbRow {
	r := new(dbRow)
	r.Store(v)
	return r
}

func (r *dbRow) load(context.Context, string) (string, error) { return r.Load().(string), nil }

// copyRead is one Get of a copy fault test.
type copyRead struct {
	start time.Time
	v     string
	err   error
}

// readAll has six readers per instance Get key until the returned stop is
// called, which returns every read.
func readAll(fleet []*Cache[string], key string, load Loader[string]) (stop func() []copyRead) {
	var (
		mu    sync.Mutex
		reads []copyRead
		wg    sync.WaitGroup
	)
	done := make(chan struct{})
	for _, c := range fleet {
		for range 6 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					r := copyRead{start: time.Now()}
					r.v, r.err = c.Get(ctx, key, load)
					cancel()
					mu.Lock()
					reads = append(reads, r)
					mu.Unlock()
				}
			})
		}
	}
	return func() []copyRead {
		close(done)
		wg.Wait()
		return reads
	}
}

// checkCopyReads fails on a read that started after mayFail and failed, or
// that started ttl or more after wrote and returned old; it logs the reads
// within the bound that did.
func checkCopyReads(t *testing.T, reads []copyRead, mayFail, wrote time.Time, ttl time.Duration, old string) {
	t.Helper()
	within := 0
	for _, r := range reads {
		switch {
		case r.err != nil && r.start.Before(mayFail):
		case r.err != nil:
			t.Errorf("a read starting %v after the write failed: %v", r.start.Sub(wrote), r.err)
		case r.v != old || r.start.Before(wrote):
		case r.start.Sub(wrote) >= ttl:
			t.Errorf("a read starting %v after the write returned the old value (bound %v)", r.start.Sub(wrote), ttl)
		default:
			within++
		}
	}
	t.Logf("%d reads, %d of the old value within the bound of %v", len(reads), within, ttl)
}

// seedCopies reads key on the fleet until both its copies exist, and
// returns their keys.
func seedCopies(t *testing.T, fleet []*Cache[string], cc *redis.ClusterClient, key string, load Loader[string]) []string {
	t.Helper()
	ctx := context.Background()
	copies := fleet[0].eng.Copies.Keys(ctx, fleet[0].keys.Key(key))
	for deadline := time.Now().Add(10 * time.Second); ; {
		n := 0
		for _, k := range copies {
			n += int(cc.Exists(ctx, k).Val())
		}
		if n == len(copies) && n == 2 {
			return copies
		}
		if time.Now().After(deadline) {
			t.Fatalf("copies %v never all written", copies)
		}
		if _, err := fleet[n%3].Get(ctx, key, load); err != nil {
			t.Fatal(err)
		}
	}
}

// copyReads sums the fleet's reads answered by a copy.
func copyReads(fleet []*Cache[string]) (n uint64) {
	for _, c := range fleet {
		n += c.Stats().CopyReads
	}
	return n
}

// masterOf is the index in masters of the master that owns key.
func masterOf(t *testing.T, cc *redis.ClusterClient, masters []*redistest.Server, key string) int {
	t.Helper()
	node, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range masters {
		if m.Addr == node.Options().Addr {
			return i
		}
	}
	t.Fatalf("%s is no master", node.Options().Addr)
	return -1
}

// The master of a copy dies while three instances read the hot key: once
// its replica took over (until then the whole cluster is down) no read
// fails, and after a Delete no read returns the old value past the copies'
// TTL, even when the Delete could not reach the dead master.
func TestHotKeyCopiesMasterKilled(t *testing.T) {
	rc, _ := redistest.StartClusterWithReplicas(t)
	const ttl = 2 * time.Second
	fleet := copyFleet(t, rc.Cluster, 2, ttl)
	cc := rc.Client()
	row := dbRowOf("old")
	copies := seedCopies(t, fleet, cc, "k", row.load)
	stop := readAll(fleet, "k", row.load)
	rc.KillMaster(masterOf(t, cc, rc.Masters, copies[0]))
	promoted, before := time.Now(), copyReads(fleet)
	var wrote time.Time
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		row.Store("new")
		if err := fleet[1].Delete(context.Background(), "k"); err == nil {
			wrote = time.Now()
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	time.Sleep(ttl + 500*time.Millisecond) // reads past the bound
	reads := stop()
	// A client learns the new master from a failed call's reload of the
	// slot map (transport.reloadTopology), within a second.
	checkCopyReads(t, reads, promoted.Add(time.Second), wrote, ttl, "old")
	if copyReads(fleet) == before {
		t.Fatal("no read went to a copy after the failover")
	}
}

// The hot key's slot moves to the master of one of its copies while three
// instances read it: no read fails, and after a Set no read returns the old
// value past the copies' TTL (a copy the move orphaned is not read, or
// expires).
func TestHotKeyCopiesSlotMigrated(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	const ttl = 2 * time.Second
	fleet := copyFleet(t, cl, 2, ttl)
	cc := cl.Client()
	ctx := context.Background()
	row := dbRowOf("old")
	copies := seedCopies(t, fleet, cc, "k", row.load)
	stop := readAll(fleet, "k", row.load)
	rkey := fleet[0].keys.Key("k")
	slot, err := cc.ClusterKeySlot(ctx, rkey).Result()
	if err != nil {
		t.Fatal(err)
	}
	to := masterOf(t, cc, cl.Masters, copies[0])
	if _, err := cl.MigrateSlot(ctx, int(slot), to); err != nil {
		t.Fatal(err)
	}
	before := copyReads(fleet)
	row.Store("new")
	if err := fleet[2].Set(ctx, "k", "new"); err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	time.Sleep(ttl + 500*time.Millisecond) // reads past the bound
	reads := stop()
	checkCopyReads(t, reads, time.Time{}, wrote, ttl, "old")
	if copyReads(fleet) == before {
		t.Fatal("no read went to a copy after the move")
	}
	if got := masterOf(t, cl.Client(), cl.Masters, rkey); got != to {
		t.Fatalf("the key is on master %d, want %d", got, to)
	}
}
