package stock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// answer asks until Redis answers (a failover makes calls fail for a few
// seconds); the same request id every time, so a retry after a lost reply
// gets the first answer. On a cluster each failure reloads the client's
// slot map: go-redis reloads it lazily, and kept sending to a killed master
// for up to a minute.
func answer(t testing.TB, rdb redis.UniversalClient, call func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := call(ctx)
		cancel()
		if err == nil {
			return
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			cc.ReloadState(context.Background())
		}
		if time.Now().After(deadline) {
			t.Errorf("no answer within a minute: %v", err)
			return
		}
		time.Sleep(50 * time.Millisecond) // a failover in progress
	}
}

// ownerOf is the index in rc.Masters of the master holding key.
func ownerOf(t testing.TB, rc *redistest.ReplicatedCluster, key string) int {
	t.Helper()
	for i, m := range rc.Masters {
		if n, err := m.Client().Exists(context.Background(), key).Result(); err == nil && n == 1 {
			return i
		}
	}
	t.Fatalf("no master holds %s", key)
	return -1
}

// waitDrained runs until the consumer has applied everything Redis holds.
func waitDrained(t testing.TB, inv *Inventory, ledger Ledger, sku string) Report {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		rep, err := inv.Reconcile(context.Background(), sku, ledger, "")
		if err == nil && rep.Pending == 0 && len(rep.Unapplied) == 0 {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %v %v", rep, err)
		}
		time.Sleep(50 * time.Millisecond) // waiting for the consumer's passes
	}
}

// A Redis Cluster with AOF (appendfsync always) on every node loses a master
// mid-sale, twice (the killed one comes back from its AOF as a replica and
// takes its shard back at the second failover), while buyers reserve and
// release and a consumer drains: no oversell, every reservation a buyer was
// told of is in the database exactly once, and Reconcile is clean once the
// consumer has drained. The kills lose no acknowledged write
// (KillMasterInSync): what a failover to a replica that missed writes costs
// is TestClusterFailoverToAStaleReplica's.
func TestClusterFailoverMidSale(t *testing.T) {
	if testing.Short() {
		t.Skip("a replicated cluster with two failovers")
	}
	rc, rdb := redistest.StartClusterWithReplicas(t, "appendonly", "yes", "appendfsync", "always")
	ctx := context.Background()
	const stock, buyers = 150, 400
	inv := newInv(t, rdb, WithBuckets(3), WithLocalSoldOut(0))
	inv.moveWait = 5 * time.Second // moves land within a failover's retries
	load(t, inv, "sku", stock)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", stock)
	c := newConsumer(t, inv, store, WithClaimIdle(time.Second), WithTimeout(2*time.Second), WithPollInterval(20*time.Millisecond))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()

	victim := ownerOf(t, rc, inv.keys("sku", 0).meta)
	var mu sync.Mutex
	reserved := map[string]bool{} // request ids answered Reserved
	released := map[string]bool{}
	var answered sync.WaitGroup
	kill := make(chan struct{})
	var wg sync.WaitGroup
	gate := make(chan struct{}, 32)
	for i := 0; i < buyers; i++ {
		wg.Add(1)
		answered.Add(1)
		go func() {
			defer wg.Done()
			gate <- struct{}{}
			defer func() { <-gate }()
			if i == buyers/3 || i == 2*buyers/3 {
				kill <- struct{}{}
			}
			rid := "r" + itoa(i)
			var res Result
			answer(t, rdb, func(ctx context.Context) (err error) {
				res, err = inv.Reserve(ctx, "sku", "u"+itoa(i), rid, 1)
				return err
			})
			answered.Done()
			if res.Outcome != Reserved {
				return
			}
			mu.Lock()
			reserved[rid] = true
			mu.Unlock()
			if i%5 == 0 { // a return
				answer(t, rdb, func(ctx context.Context) error { _, err := inv.Release(ctx, "sku", rid); return err })
				mu.Lock()
				released[rid] = true
				mu.Unlock()
			}
		}()
	}
	for round := 0; round < 2; round++ {
		<-kill
		rc.KillMasterInSync(victim)
		rc.RejoinAsReplica(victim)
	}
	wg.Wait()
	rep := waitDrained(t, inv, store, "sku")
	stop()
	<-ran
	if t.Failed() {
		return
	}
	orders := ordersByID(t, store, "sku")
	active := int64(0)
	for rid := range reserved {
		o, ok := orders[rid]
		want := StateReserved
		if released[rid] {
			want = StateReleased
		}
		if !ok || !o.Applied || o.State != want {
			t.Errorf("%s: order %+v (present %v), want %v", rid, o, ok, want)
		}
		if !released[rid] {
			active++
		}
	}
	if len(orders) != len(reserved) {
		t.Errorf("%d orders in the database, %d reservations answered", len(orders), len(reserved))
	}
	if !rep.Clean() || rep.DBActive != active || active > stock || rep.Redis.Reserved != active {
		t.Fatalf("reconcile: %v; %d reserved, %d released, %d active, stock %d (consumer %+v)", rep, len(reserved), len(released), active, stock, c.Stats())
	}
	t.Logf("%d reservations, %d released, %d active of %d; consumer %+v", len(reserved), len(released), active, stock, c.Stats())
}

// A failover without persistence to a replica that had not received the
// last writes (it was frozen while they were made and consumed): Redis
// forgets those reservations, which the database already holds. Reconcile
// reports them as orphans, Repair rebuilds the sale from the database, and
// the sale then sells exactly the units left.
func TestClusterFailoverToAStaleReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("a replicated cluster")
	}
	rc, rdb := redistest.StartClusterWithReplicas(t)
	ctx := context.Background()
	const stock = 40
	inv := newInv(t, rdb, WithLocalSoldOut(0))
	load(t, inv, "sku", stock)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", stock)
	c := newConsumer(t, inv, store, WithClaimIdle(0))
	reserve := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if res, err := inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1); err != nil || res.Outcome != Reserved {
				t.Fatalf("reserve %d: %+v %v", i, res, err)
			}
		}
	}
	reserve(0, 10)
	drain(t, c)
	shard := ownerOf(t, rc, inv.keys("sku", 0).meta)
	if n, err := rc.Masters[shard].Client().Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d %v", n, err)
	}
	// The replica is frozen, then the master drops its link to it: it
	// misses everything from here. (Dropping the link from the replica's
	// side first let it reconnect and catch up before the freeze when its
	// once-a-second retry fell in between, as on a loaded machine.)
	rc.Replicas[shard].Freeze()
	if err := rc.Masters[shard].Client().Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	reserve(10, 20)
	drain(t, c)
	rc.Masters[shard].Kill()
	rc.Replicas[shard].Thaw()
	start := time.Now()
	rc.KillMaster(shard) // waits for the stale replica's promotion
	t.Logf("failover in %v", time.Since(start))
	var rep Report
	start = time.Now()
	answer(t, rdb, func(ctx context.Context) (err error) {
		rep, err = inv.Reconcile(ctx, "sku", store, "")
		return err
	})
	t.Logf("reconciled after %v", time.Since(start))
	if rep.NoSale || len(rep.Orphans) != 10 || rep.Orphans[0] != "r10" || rep.Redis.Reserved != 10 || rep.DBActive != 20 || rep.Pending != 0 {
		t.Fatalf("after the failover: %v orphans %v", rep, rep.Orphans)
	}
	if _, err := inv.Repair(ctx, "sku", store, Window{}, ""); err != nil {
		t.Fatal(err)
	}
	rep, err := inv.Reconcile(ctx, "sku", store, "")
	if err != nil || !rep.Clean() || rep.Redis.Reserved != 20 || rep.Redis.Remaining != stock-20 {
		t.Fatalf("after repair: %v %v", rep, err)
	}
	// The buyers of r10..r19 still hold their unit; the rest sells once.
	var res Result
	answer(t, rdb, func(ctx context.Context) (err error) { res, err = inv.Reserve(ctx, "sku", "u15", "r15", 1); return err })
	if !res.Duplicate {
		t.Fatalf("retry after repair: %+v", res)
	}
	sold := 0
	for i := 100; i < 200; i++ {
		answer(t, rdb, func(ctx context.Context) (err error) {
			res, err = inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
			return err
		})
		if res.Outcome == Reserved {
			sold++
		}
	}
	drain(t, c)
	rep, err = inv.Reconcile(ctx, "sku", store, "")
	if sold != stock-20 || err != nil || !rep.Clean() || rep.DBActive != stock {
		t.Fatalf("sold %d after repair: %v %v", sold, rep, err)
	}
}
