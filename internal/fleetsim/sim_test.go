package fleetsim

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

var (
	flagN     = flag.String("fleet.n", "", "instance counts to run, comma-separated (empty: the CI form, 5 instances)")
	flagRate  = flag.Int("fleet.rate", 200, "reads per second per instance")
	flagDur   = flag.Duration("fleet.dur", 0, "measured time of each run (default 5s)")
	flagKeys  = flag.Int("fleet.keys", 10_000, "keys in the zipfian key space")
	flagLocal = flag.Bool("fleet.local", false, "detect hot keys per instance only (no fleet view)")
	flagMin   = flag.Uint64("fleet.min", 100, "accesses per window a key needs to be hot")
)

// The workload and detection settings. No key is hot on one instance: at 200
// reads/s the hottest key of a zipf(1.1) over 10,000 keys takes about 27/s,
// under the threshold of 100 per window; across the fleet it is hot from 4
// instances on. The CI form halves the threshold, so that a slow machine
// that serves half the reads still sees the hottest key promoted.
const (
	zipfS  = 1.1
	topK   = 20
	window = time.Second
	tick   = 100 * time.Millisecond
)

// node is one server of the cluster, looked at directly.
type node struct {
	role string
	c    *redis.Client
}

// result is what one run measured.
type result struct {
	n                    int
	reads, redisReads    uint64
	dur                  time.Duration
	hotEverywhere        int           // instances on which the hottest key was promoted
	detectP50, detectMax time.Duration // from the start of traffic to that promotion
	fleetHot             float64       // keys hot across the fleet, mean over instances
	fleetErrors          uint64
	cmds                 []float64 // per node, commands/s
	conns, pubsub        []int     // per node, at the end of the run
}

func TestFleetSimulation(t *testing.T) {
	ns, dur := []int{5}, 5*time.Second
	if *flagN == "" && !isSet("fleet.min") {
		*flagMin = 50
	}
	if *flagN != "" {
		ns = nil
		for _, f := range strings.Split(*flagN, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				t.Fatalf("-fleet.n: bad count %q", f)
			}
			ns = append(ns, n)
		}
	}
	if *flagDur > 0 {
		dur = *flagDur
	}
	rc, _ := redistest.StartClusterWithReplicas(t)
	var nodes []node
	for _, s := range rc.Masters {
		nodes = append(nodes, node{"master", s.Client()})
	}
	for _, s := range rc.Replicas {
		nodes = append(nodes, node{"replica", s.Client()})
	}
	var results []result
	for _, n := range ns {
		results = append(results, run(t, rc, nodes, n, dur))
	}
	report(t, nodes, results, dur)
	if r := results[0]; *flagN == "" && !*flagLocal { // the CI form checks that the fleet view works
		if r.hotEverywhere != r.n || r.fleetErrors != 0 {
			t.Fatalf("hottest key promoted on %d of %d instances, %d fleet errors", r.hotEverywhere, r.n, r.fleetErrors)
		}
	}
}

// run runs n instances for dur and measures.
func run(t *testing.T, rc *redistest.ReplicatedCluster, nodes []node, n int, dur time.Duration) result {
	ctx := context.Background()
	group := fmt.Sprintf("sim%d-%d", n, time.Now().UnixNano())
	quietLog := slog.New(slog.NewTextHandler(io.Discard, nil))
	hottest := key(0)
	var start atomic.Int64 // unix nanos: traffic starts
	type instance struct {
		det      *hotkey.Detector
		c        *cache.Cache[string]
		promoted atomic.Int64 // unix nanos of the hottest key's promotion
	}
	insts := make([]*instance, n)
	for i := range insts {
		in := &instance{}
		rdb := rc.Client()
		opts := []hotkey.Option{hotkey.WithWindow(window), hotkey.WithTick(tick), hotkey.WithMinCount(*flagMin),
			hotkey.WithK(topK), hotkey.WithOnChange(func(e hotkey.Event) {
				if e.Hot && e.Key == hottest {
					in.promoted.CompareAndSwap(0, e.At.UnixNano())
				}
			})}
		if !*flagLocal {
			opts = append(opts, hotkey.WithFleet(rdb, group))
		}
		det, err := hotkey.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix(group+":"), cache.WithLogger(quietLog),
			cache.WithLocal(1<<20), cache.WithHotKeys(det))
		if err != nil {
			t.Fatal(err)
		}
		in.det, in.c = det, c
		insts[i] = in
	}
	defer func() {
		for _, in := range insts {
			in.c.Close()
			in.det.Close()
		}
	}()
	time.Sleep(300 * time.Millisecond) // subscriptions up before traffic
	before := commands(t, nodes)
	start.Store(time.Now().UnixNano())
	load := func(_ context.Context, k string) (string, error) { return "value of " + k, nil }
	runCtx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var reads atomic.Uint64
	var wg sync.WaitGroup
	for i, in := range insts {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			z := rand.NewZipf(rng, zipfS, 1, uint64(*flagKeys-1))
			pace := time.NewTicker(10 * time.Millisecond)
			defer pace.Stop()
			per := max(1, *flagRate/100)
			for {
				select {
				case <-runCtx.Done():
					return
				case <-pace.C:
				}
				for range per {
					if _, err := in.c.Get(runCtx, key(int(z.Uint64())), load); err != nil && runCtx.Err() == nil {
						t.Errorf("Get: %v", err)
						return
					}
					reads.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Duration(time.Now().UnixNano() - start.Load())
	after := commands(t, nodes)
	r := result{n: n, reads: reads.Load(), dur: elapsed}
	for i := range nodes {
		r.cmds = append(r.cmds, float64(after[i]-before[i])/elapsed.Seconds())
		all, ps := connections(t, nodes[i].c)
		r.conns, r.pubsub = append(r.conns, all), append(r.pubsub, ps)
	}
	var lat []time.Duration
	for _, in := range insts {
		st := in.c.Stats()
		r.redisReads += st.Hits - st.LocalHits + st.Misses
		ds := in.det.Stats()
		r.fleetHot += float64(ds.FleetHot) / float64(n)
		r.fleetErrors += ds.FleetErrors
		if p := in.promoted.Load(); p != 0 {
			lat = append(lat, time.Duration(p-start.Load()))
		}
	}
	r.hotEverywhere = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		r.detectP50, r.detectMax = lat[len(lat)/2], lat[len(lat)-1]
	}
	return r
}

func key(i int) string { return "k" + strconv.Itoa(i) }

// isSet reports whether the flag was given on the command line.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// commands returns each node's total_commands_processed.
func commands(t *testing.T, nodes []node) []uint64 {
	out := make([]uint64, len(nodes))
	for i, nd := range nodes {
		info, err := nd.c.Info(context.Background(), "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
				out[i], _ = strconv.ParseUint(v, 10, 64)
			}
		}
	}
	return out
}

// connections returns a node's client connections and, of them, those in
// pub/sub mode (flag P: SUBSCRIBE or SSUBSCRIBE).
func connections(t *testing.T, c *redis.Client) (all, pubsub int) {
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if line == "" {
			continue
		}
		all++
		for _, f := range strings.Fields(line) {
			if flags, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(flags, "P") {
				pubsub++
			}
		}
	}
	return all - 1, pubsub // less the connection asking
}

func report(t *testing.T, nodes []node, rs []result, dur time.Duration) {
	var b strings.Builder
	mode := "fleet view"
	if *flagLocal {
		mode = "local detection only"
	}
	fmt.Fprintf(&b, "\n%s, %d reads/s per instance, zipf s=%.1f over %d keys, %v measured, threshold %d/window, k=%d\n\n",
		mode, *flagRate, zipfS, *flagKeys, dur, *flagMin, topK)
	b.WriteString("| instances | reads/s | reaching Redis | hottest key hot on | detection p50 / max | fleet-hot keys | cmds/s per master | cmds/s per replica | conns per master (pub/sub) | conns per replica |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---|---|---|---|\n")
	for _, r := range rs {
		var mc, rcm, mconn, rconn []string
		for i, nd := range nodes {
			cmd := fmt.Sprintf("%.0f", r.cmds[i])
			conn := fmt.Sprintf("%d (%d)", r.conns[i], r.pubsub[i])
			if nd.role == "master" {
				mc, mconn = append(mc, cmd), append(mconn, conn)
			} else {
				rcm, rconn = append(rcm, cmd), append(rconn, fmt.Sprint(r.conns[i]))
			}
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.1f %% | %d | %v / %v | %.1f | %s | %s | %s | %s |\n",
			r.n, float64(r.reads)/r.dur.Seconds(), 100*float64(r.redisReads)/float64(max(r.reads, 1)),
			r.hotEverywhere, r.detectP50.Round(time.Millisecond), r.detectMax.Round(time.Millisecond), r.fleetHot,
			strings.Join(mc, " / "), strings.Join(rcm, " / "), strings.Join(mconn, " / "), strings.Join(rconn, " / "))
	}
	t.Log(b.String())
}
