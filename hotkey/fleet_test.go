package hotkey

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// fleetRig is a group of detectors on one fake clock, each with its own
// client, as instances of one service would be. The fleet's keys expire in
// Redis after three windows of real time, so the window is long enough that
// none expires while a test runs, however slowly the machine runs its ticks
// (with a window of a second, a loaded machine took longer than three
// seconds between two exchanges and found the previous window gone).
type fleetRig struct {
	clk  *fakeClock
	dets []*Detector
	bg   []string
	rng  *rand.Rand
}

const (
	fleetTick      = 6 * time.Second
	fleetWindow    = time.Minute
	fleetMinCount  = 1000 // per window
	fleetPerTick   = 20   // reads of the warm key per instance per tick: 200 a window
	fleetBgPerTick = 200  // background reads per instance per tick, over many keys
)

// newFleetRig returns n detectors; client returns the Redis client of the
// i-th, or nil for one without the fleet view.
func newFleetRig(t *testing.T, n int, client func(i int) redis.UniversalClient, opts ...Option) *fleetRig {
	t.Helper()
	return newSkewedFleetRig(t, n, client, func(int) time.Duration { return 0 }, opts...)
}

// newSkewedFleetRig is newFleetRig with the i-th detector's clock skew(i)
// ahead of the rig's clock, which stands for the Redis server's.
func newSkewedFleetRig(t *testing.T, n int, client func(i int) redis.UniversalClient, skew func(i int) time.Duration, opts ...Option) *fleetRig {
	t.Helper()
	r := &fleetRig{clk: newFakeClock(), bg: keyNames(5000), rng: rand.New(rand.NewPCG(1, 2))}
	for i := range n {
		local := func() time.Time { return r.clk.Now().Add(skew(i)) }
		o := append([]Option{WithClock(local), withServerClock(r.clk.Now), withShards(8), WithWindow(fleetWindow),
			WithTick(fleetTick), WithMinCount(fleetMinCount)}, opts...)
		if rdb := client(i); rdb != nil {
			o = append(o, WithFleet(rdb, "svc"))
		}
		d, err := New(o...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { d.Close() })
		r.dets = append(r.dets, d)
	}
	return r
}

// tick runs one tick of traffic on every instance, then moves the clock on
// and ticks them all.
func (r *fleetRig) tick(warm string) {
	for _, d := range r.dets {
		for range fleetPerTick {
			d.Record(warm)
		}
		for range fleetBgPerTick {
			d.Record(r.bg[r.rng.IntN(len(r.bg))])
		}
	}
	r.clk.Advance(fleetTick)
	for _, d := range r.dets {
		d.Tick()
	}
}

// hotOn counts the instances that say key is hot.
func (r *fleetRig) hotOn(key string) int {
	n := 0
	for _, d := range r.dets {
		if d.IsHot(key) {
			n++
		}
	}
	return n
}

// A key read 200 times a window on each of 20 instances (4,000 a window in
// all), under a per-instance threshold of 1,000 a window, is promoted on
// every instance within two windows with the fleet view, and on none without
// it; a background key is promoted nowhere.
func TestFleetPromotesAKeyHotOnlyInSum(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	const instances = 20
	for _, tc := range []struct {
		name  string
		fleet bool
	}{{"fleet", true}, {"local only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFleetRig(t, instances, func(int) redis.UniversalClient {
				if !tc.fleet {
					return nil
				}
				c := cl.Client()
				// Connected before the clock starts: the first exchange
				// must not also discover the cluster on a loaded machine.
				if err := c.ForEachShard(context.Background(), func(ctx context.Context, s *redis.Client) error {
					return s.Ping(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
				return c
			})
			all := 0
			for i := 1; i <= 4*int(fleetWindow/fleetTick); i++ {
				r.tick("warm")
				if n := r.hotOn("warm"); n == instances && all == 0 {
					all = i
				}
			}
			if hot := r.hotOn(r.bg[0]); hot != 0 {
				t.Errorf("a background key is hot on %d instances", hot)
			}
			if !tc.fleet {
				if all != 0 || r.hotOn("warm") != 0 {
					t.Fatalf("local-only detection promoted the warm key (tick %d)", all)
				}
				return
			}
			t.Logf("hot on all %d instances after %d ticks (%v)", instances, all, time.Duration(all)*fleetTick)
			if all == 0 || time.Duration(all)*fleetTick > 2*fleetWindow {
				t.Fatalf("stats of the first instance %+v; "+"hot on all instances after %d ticks, want within two windows (%d ticks)", r.dets[0].Stats(), all, 2*fleetWindow/fleetTick)
			}
			if r.hotOn("warm") != instances {
				t.Fatalf("hot on %d of %d instances at the end", r.hotOn("warm"), instances)
			}
			st := r.dets[0].Stats()
			if st.FleetErrors != 0 || st.FleetExchanges == 0 || st.FleetHot != 1 {
				t.Fatalf("stats %+v", st)
			}
			// The key cools down everywhere: the fleet demotes it within
			// two windows of the last window it was hot in.
			cooled := 0
			for i := 1; i <= 4*int(fleetWindow/fleetTick) && cooled == 0; i++ {
				r.tick("other")
				if r.hotOn("warm") == 0 {
					cooled = i
				}
			}
			if cooled == 0 || time.Duration(cooled)*fleetTick > 3*fleetWindow {
				t.Fatalf("still hot somewhere %d ticks after cooling", cooled)
			}
		})
	}
}

// A key hot on one instance by its own counts stays hot there with the
// fleet view on, whatever the others see.
func TestFleetKeepsLocallyHotKeys(t *testing.T) {
	_, rdb := redistest.Single(t)
	r := newFleetRig(t, 2, func(int) redis.UniversalClient { return rdb })
	for range 30 {
		for range 150 { // 1,500 a window on instance 0 only
			r.dets[0].Record("mine")
		}
		r.tick("warm")
	}
	if !r.dets[0].IsHot("mine") {
		t.Fatal("a key hot by the instance's own counts is not hot there")
	}
	// The fleet view carries it to the other instance too: 1,500 a window
	// in all is over the threshold.
	if !r.dets[1].IsHot("mine") {
		t.Fatal("a key hot across the fleet is not hot on the other instance")
	}
}

// With Redis unreachable the detector keeps detecting locally, and every
// failed exchange is counted and handed to the error handler.
func TestFleetDegradesToLocalWhenRedisFails(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	var mu sync.Mutex
	var errs []error
	r := newFleetRig(t, 1, func(int) redis.UniversalClient { return rdb },
		WithErrorHandler(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }))
	srv.Kill()
	for range 30 {
		for range 150 {
			r.dets[0].Record("mine")
		}
		r.tick("warm")
	}
	if !r.dets[0].IsHot("mine") {
		t.Fatal("local detection stopped with Redis down")
	}
	st := r.dets[0].Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.FleetErrors == 0 || int(st.FleetErrors) != len(errs) {
		t.Fatalf("%d fleet errors counted, %d reported", st.FleetErrors, len(errs))
	}
	for _, err := range errs {
		apicheck.RedisFailure(t, ErrRedis, "a fleet exchange (WithErrorHandler)", err)
	}
}

func TestWithFleetRejectsBadInput(t *testing.T) {
	_, rdb := redistest.Single(t)
	for _, o := range []Option{WithFleet(nil, "g"), WithFleet(rdb, ""), WithFleet(rdb, "a{b")} {
		if _, err := New(o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("New: %v, want ErrInvalidOption", err)
		}
	}
	// A nil Option is ignored, and a nil error handler means none.
	d, err := New(nil, WithErrorHandler(nil), WithClock(time.Now))
	if err != nil {
		t.Fatalf("New(nil option, WithErrorHandler(nil)): %v", err)
	}
	d.Close()
}

// An instance that joins a busy fleet holds its hot keys from its first
// tick: its first exchange reads the windows the others filled (and adds
// nothing of its own, which would not cover them).
func TestFleetJoinerSeesTheFleetAtOnce(t *testing.T) {
	_, rdb := redistest.Single(t)
	r := newFleetRig(t, 10, func(int) redis.UniversalClient { return rdb })
	for range 3 * int(fleetWindow/fleetTick) {
		r.tick("warm")
	}
	if r.hotOn("warm") != 10 {
		t.Fatalf("hot on %d of 10 instances", r.hotOn("warm"))
	}
	set, _ := wire.FleetKeys(wire.HotKeyPrefix, "svc", r.clk.Now().UnixNano()/int64(fleetWindow)-1)
	before, err := rdb.ZScore(context.Background(), set, "warm").Result()
	if err != nil {
		t.Fatal(err)
	}
	joiner, err := New(WithClock(r.clk.Now), withShards(8), WithWindow(fleetWindow), WithTick(fleetTick),
		WithMinCount(fleetMinCount), WithFleet(rdb, "svc"))
	if err != nil {
		t.Fatal(err)
	}
	defer joiner.Close()
	joiner.Record("warm")
	joiner.Tick()
	if !joiner.IsHot("warm") {
		t.Fatalf("the joiner does not hold the fleet's hot key; stats %+v", joiner.Stats())
	}
	if after, _ := rdb.ZScore(context.Background(), set, "warm").Result(); after != before {
		t.Fatalf("the joiner's first exchange added to a window it did not cover: %v -> %v", before, after)
	}
}

// WithPrefix moves the fleet's keys: detectors of one prefix share counts
// under it, and write nothing under the default.
func TestFleetWithPrefix(t *testing.T) {
	_, rdb := redistest.Single(t)
	const prefix = "app:hot:"
	r := newFleetRig(t, 10, func(int) redis.UniversalClient { return rdb }, WithPrefix(prefix))
	for range 3 * int(fleetWindow/fleetTick) {
		r.tick("warm")
	}
	if r.hotOn("warm") != 10 {
		t.Fatalf("hot on %d of 10 instances", r.hotOn("warm"))
	}
	ctx := context.Background()
	if n, _ := rdb.Keys(ctx, prefix+"{svc}:*").Result(); len(n) == 0 {
		t.Error("no key under the prefix")
	}
	if n, _ := rdb.Keys(ctx, wire.HotKeyPrefix+"*").Result(); len(n) != 0 {
		t.Errorf("keys under the default prefix: %v", n)
	}
	if _, err := New(WithPrefix("a{b")); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithPrefix with a brace: %v, want ErrInvalidOption", err)
	}
}
