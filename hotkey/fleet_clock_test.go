package hotkey

import (
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Twenty detectors whose clocks are spread evenly from a window behind the
// server's clock to a window ahead of it all promote a key read 200 times a
// window on each (4,000 in all, threshold 2,500), within three windows, and
// hold it to the end: the windows are numbered by the server's clock, so
// every instance adds to and reads the same windows.
func TestFleetSkewedClocksAgreeOnWindows(t *testing.T) {
	_, rdb := redistest.Single(t)
	const instances = 20
	skew := func(i int) time.Duration {
		return time.Duration(2*i-(instances-1)) * fleetWindow / (instances - 1)
	}
	// The threshold is well under the sum, but over what an instance sees
	// of a window that more than three eighths of the fleet have not added
	// to yet.
	r := newSkewedFleetRig(t, instances, func(int) redis.UniversalClient { return rdb }, skew, WithMinCount(2500))
	ticks := 5 * int(fleetWindow/fleetTick)
	first := make([]int, instances) // tick at which each instance first held the key (0: never)
	all := 0
	for i := 1; i <= ticks; i++ {
		r.tick("warm")
		for j, d := range r.dets {
			if first[j] == 0 && d.IsHot("warm") {
				first[j] = i
			}
		}
		if all == 0 && r.hotOn("warm") == instances {
			all = i
		}
	}
	var never []time.Duration
	for j, at := range first {
		if at == 0 {
			never = append(never, skew(j))
		}
	}
	t.Logf("hot on all %d instances after %d ticks (0: never); at the end hot on %d; never hot on the instances skewed by %v",
		instances, all, r.hotOn("warm"), never)
	if len(never) != 0 || r.hotOn("warm") != instances {
		t.Fatalf("hot on %d of %d instances at the end; never hot on the instances skewed by %v",
			r.hotOn("warm"), instances, never)
	}
	if all == 0 || time.Duration(all)*fleetTick > 3*fleetWindow {
		t.Fatalf("hot on all instances after %d ticks, want within three windows (%d ticks)", all, 3*fleetWindow/fleetTick)
	}
	for j, d := range r.dets {
		if st := d.Stats(); st.FleetErrors != 0 {
			t.Fatalf("instance %d: stats %+v", j, st)
		}
	}
}

// A detector on the real clock, but 90 s behind the server's, learns the
// server's clock from TIME (on the node of the group's slot) before its
// first exchange, and numbers that exchange's window by it.
func TestFleetReadsTheServerClock(t *testing.T) {
	redistest.NeedServer(t) // on miniredis the server-clock script fails: exchanges are counted as FleetErrors and the detector counts locally
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.New(t)
			const behind = 90 * time.Second
			local := Option(func(c *config) { c.now = func() time.Time { return time.Now().Add(-behind) } })
			d, err := New(local, withTicks(make(chan time.Time)), WithWindow(time.Minute), WithTick(time.Second),
				WithFleet(rdb, "clock-"+topo.Name))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			before := time.Now()
			d.Tick()
			after := time.Now()
			d.tickMu.Lock()
			off, win, synced := d.fleetOffset, d.fleetWin, d.fleetSynced
			d.tickMu.Unlock()
			if st := d.Stats(); st.FleetErrors != 0 || st.FleetExchanges != 1 {
				t.Fatalf("stats %+v", st)
			}
			// Redis runs on this machine's clock: the offset is the skew, to
			// within half a round trip (bounded by the exchange's timeout).
			if !synced || off < behind-time.Second || off > behind+time.Second {
				t.Fatalf("offset %v (known: %v), want %v", off, synced, behind)
			}
			lo, hi := before.UnixNano()/int64(time.Minute), after.UnixNano()/int64(time.Minute)
			if win < lo || win > hi {
				t.Fatalf("exchanged in window %d, want the server's, %d to %d (the detector's own: %d)",
					win, lo, hi, before.Add(-behind).UnixNano()/int64(time.Minute))
			}
		})
	}
}

// A detector that cannot read the server's clock reports the failure, asks
// again at most once a window of its own clock, and detects locally.
func TestFleetServerClockUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	srv.Kill()
	var errs []error
	d, err := New(withTicks(make(chan time.Time)), WithWindow(time.Hour), WithTick(time.Minute), WithMinCount(10),
		WithFleet(rdb, "unreachable"), WithErrorHandler(func(err error) { errs = append(errs, err) }))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 3 {
		for range 20 {
			d.Record("mine")
		}
		d.Tick()
	}
	st := d.Stats()
	if len(errs) == 0 || !errors.Is(errs[0], ErrRedis) || st.FleetErrors != uint64(len(errs)) {
		t.Fatalf("errors %v, stats %+v", errs, st)
	}
	// Three ticks within seconds cross at most one boundary of an hour's
	// window: at most two tries.
	if len(errs) > 2 {
		t.Fatalf("%d tries within seconds, want one a window: %v", len(errs), errs)
	}
	if !d.IsHot("mine") {
		t.Fatal("local detection stopped with the server's clock unreachable")
	}
}
