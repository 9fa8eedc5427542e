package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestMain silences go-redis's reconnect log lines, as the demo does.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

// shortConfig runs every storm in about a second per cache, with a database
// small enough to be overloaded by a thousand requests a second.
func shortConfig() config {
	c := defaultConfig()
	c.Rows = 2000
	c.DBConns = 4
	c.DBWait = 50 * time.Millisecond
	c.Rate = 1000
	c.Keys = 150
	c.Scale = 0.15
	c.InFlight = 2000
	return c
}

// TestStorms runs every scenario, shortened, and checks what the demo
// claims: in each storm cacheguard sends the database far fewer queries than
// the naive cache-aside, and in the zipfian load its local tier takes a large
// share of the reads off Redis.
func TestStorms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs load for several seconds")
	}
	srv, rdb := redistest.Single(t) // miniredis's TTLs run in real time too
	if srv.Mini != nil && raceEnabled {
		t.Skip("the storms' arrival rates are beyond miniredis (a fresh Lua VM per script) under the race detector; run without -race or with redis-server")
	}
	ctx := context.Background()
	e, err := newEnv(ctx, shortConfig(), rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.dial = func() redis.UniversalClient { return failFastClient(srv.Addr) }
	if srv.Mini != nil {
		e.restart = func() error { srv.Mini.FlushAll(); return nil }
	} else {
		e.restart = func() error { srv.Kill(); srv.Restart(); return nil }
	}

	// The avalanche needs a TTL long enough for its jitter to spread the
	// expiries over several 100 ms buckets, and keys read often enough that
	// each is reloaded soon after it expires; the other storms make their
	// point in less time.
	base := e.cfg
	var results []scenarioResult
	for _, s := range scenarios() {
		e.cfg = base
		if s.name == "avalanche" {
			e.cfg.Scale, e.cfg.Keys = 0.5, 100
		}
		r, err := runScenario(ctx, e, s)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	e.cfg = base
	var report bytes.Buffer
	for _, r := range results {
		printScenario(&report, r)
	}
	t.Log(report.String())

	got := map[string]scenarioResult{}
	for _, r := range results {
		if r.skipped != "" {
			t.Fatalf("%s skipped: %s", r.name, r.skipped)
		}
		want := 3
		if r.name == "penetration" {
			want = 2
		}
		if len(r.runs) != want || r.runs[0].mode != modeNaive || r.runs[1].mode != modeGuard || (want == 3 && r.runs[2].mode != modeNoLocal) {
			t.Fatalf("%s: %d runs %+v, want naive, cacheguard (and without its local tier)", r.name, len(r.runs), r.runs)
		}
		for _, run := range r.runs {
			if run.requests == 0 {
				t.Fatalf("%s, %s: no requests were sent", r.name, run.mode)
			}
			// The chart's shading and strips account for every refused
			// query and failed request.
			if sum(run.refusedSer) != run.refused || sum(run.failedSer) != run.failed {
				t.Errorf("%s, %s: %d refused and %d failed over time, %d and %d in all",
					r.name, run.mode, sum(run.refusedSer), sum(run.failedSer), run.refused, run.failed)
			}
		}
		got[r.name] = r
	}
	naive := func(name string) runResult { return got[name].runs[0] }
	guard := func(name string) runResult { return got[name].runs[1] }
	noLocal := func(name string) runResult { return got[name].runs[2] }

	// Penetration: every naive request is a query; the Bloom filter
	// (false-positive rate 0.1%) lets almost none through.
	if n, g := naive("penetration"), guard("penetration"); n.queries < n.requests*9/10 || g.queries*50 > n.queries {
		t.Errorf("penetration: naive %d queries for %d requests, cacheguard %d; want naive ≈ requests and cacheguard < 2%% of it",
			n.queries, n.requests, g.queries)
	}
	if st := guard("penetration").stats; st == nil || st.FilterRejects == 0 {
		t.Errorf("penetration: the Bloom filter rejected nothing: %+v", st)
	}

	// Avalanche: the keys expire together under the fixed TTL and spread out
	// under the jittered one: a lower peak, and no more queries in all.
	if n, g := naive("avalanche"), guard("avalanche"); g.peak*2 > n.peak || g.queries > n.queries {
		t.Errorf("avalanche: peak %d vs %d queries/s, total %d vs %d (naive vs cacheguard); want cacheguard's peak at most half and no more queries",
			n.peak, g.peak, n.queries, g.queries)
	}

	// Restart: while Redis is down the naive cache sends every read to the
	// database; cacheguard lets only as many loads through at once as the
	// database has connections (WithMaxLoads caps fallback loads too), so the
	// database refuses none of its queries, and once Redis is back each key
	// is filled once, under its lease. How many queries either sends in all
	// depends on how long the restart takes (the fallback loads answer
	// readers while it lasts), so that is not compared.
	for _, g := range []runResult{guard("restart"), noLocal("restart")} {
		if g.stats == nil {
			t.Fatalf("restart, %s: no stats", g.mode)
		}
		fills := g.stats.Loads - g.stats.FallbackLoads
		t.Logf("restart, %s: %d loads, %d of them fallback loads, %d refused", g.mode, g.stats.Loads, g.stats.FallbackLoads, g.refused)
		if g.refused != 0 || fills > uint64(e.cfg.Keys) {
			t.Errorf("restart, %s: %d queries refused by the database, %d fills (loads under a lease) for %d keys; want none refused and at most one fill per key",
				g.mode, g.refused, fills, e.cfg.Keys)
		}
	}

	// Breakdown: one load per expiry (a few in all) against hundreds.
	if n, g := naive("breakdown"), guard("breakdown"); g.queries > 6 || n.queries < 10*max(g.queries, 5) {
		t.Errorf("breakdown: naive %d queries, cacheguard %d; want cacheguard ≤ 6 and naive ≥ 10× that", n.queries, g.queries)
	}

	// Zipfian: everything is cached, so the database is idle either way;
	// the hot keys are promoted to the local tier and stop costing Redis
	// round trips.
	n, g := naive("zipfian"), guard("zipfian")
	if n.queries != 0 || g.queries != 0 {
		t.Errorf("zipfian: %d and %d database queries, want none", n.queries, g.queries)
	}
	if g.stats == nil || g.stats.LocalHits < uint64(g.requests)/5 || g.redisCalls*5 > n.redisCalls*4 {
		t.Errorf("zipfian: %d Redis calls vs naive %d, local hits %+v; want a fifth of the reads served locally",
			g.redisCalls, n.redisCalls, g.stats)
	}
	// Without its local tier every read is answered by Redis: the saving
	// above is the local tier's. The runs' call counts are not compared:
	// concurrent Gets of one key share one GET, and how many overlap
	// depends on the machine (326 calls for 375 reads in one CI run, 161
	// beside busy loops, fewer than the 193 of the run with the tier).
	if nl := noLocal("zipfian"); nl.stats == nil || nl.stats.LocalHits != 0 || nl.stats.Hits != uint64(nl.requests) {
		t.Errorf("zipfian without the local tier: %d Redis calls for %d reads, stats %+v; want every read a Redis hit, none local",
			nl.redisCalls, nl.requests, nl.stats)
	}
	// Leases alone hold the breakdown to one load per expiry too.
	if nl := noLocal("breakdown"); nl.queries > 6 || nl.stats == nil || nl.stats.LocalHits != 0 {
		t.Errorf("breakdown without the local tier: %d queries, stats %+v; want ≤ 6 and no local hits", nl.queries, nl.stats)
	}
	// The breakdown's marks are where the naive key really expired: a
	// query burst starts at each of them (not at multiples of the TTL),
	// within the time the naive cache's own requests took: a reader that
	// comes after the expiry may wait that long for its turn (the load
	// keeps a bounded number of requests in flight), and the key expires
	// only a SET after the load the mark counts from. On a loaded machine
	// the naive cache's p99 reached 1.08 s, its burst 245 ms past a mark.
	nb := naive("breakdown")
	window := max(3, int((nb.p99+bucket-1)/bucket))
	for _, m := range got["breakdown"].marks {
		i := int(m.at / bucket)
		if i+window < len(nb.series) && sum(nb.series[i:i+window]) == 0 {
			t.Errorf("breakdown: mark at %v, but the naive cache sent no query in the %v after it (its p99): %v", m.at, time.Duration(window)*bucket, nb.series)
		}
	}

	// The chart has one panel per scenario, each with both lines.
	var svg bytes.Buffer
	if err := writePlot(&svg, results, e.cfg, newMachine()); err != nil {
		t.Fatal(err)
	}
	checkPlot(t, svg.Bytes(), results)
	if !bytes.Contains(svg.Bytes(), []byte("load average")) {
		t.Error("the chart does not say how loaded the machine was")
	}

	// Every goroutine the runs started has ended by now.
	if leaked := leftovers(); leaked != "" {
		t.Errorf("goroutines left behind:\n%s", leaked)
	}
}

// checkPlot parses the SVG and counts each scenario's lines.
func checkPlot(t *testing.T, svg []byte, results []scenarioResult) {
	t.Helper()
	var doc struct {
		XMLName xml.Name
		Texts   []string `xml:"text"`
		Paths   []struct {
			Class string `xml:"class,attr"`
			D     string `xml:"d,attr"`
		} `xml:"path"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	if doc.XMLName.Local != "svg" {
		t.Fatalf("chart root is %q, want svg", doc.XMLName.Local)
	}
	counts := map[string]int{}
	for _, p := range doc.Paths {
		if !strings.HasPrefix(p.D, "M") {
			t.Errorf("path %q does not start with a move", p.D)
		}
		counts[p.Class]++
	}
	want := map[string]int{}
	for _, r := range results {
		for _, run := range r.runs {
			for _, prefix := range []string{"", "failed-", "p99-"} {
				want[prefix+modeClass(run.mode)]++
			}
		}
	}
	for class, n := range want {
		if counts[class] != n {
			t.Errorf("chart has %d lines of class %q, want %d (one per run, in the chart and each strip): %v", counts[class], class, n, counts)
		}
	}
	for _, r := range results {
		found := false
		for _, text := range doc.Texts {
			found = found || strings.HasPrefix(text, r.name)
		}
		if !found {
			t.Errorf("chart has no panel titled %q", r.name)
		}
	}
}

// TestSkipsRestartWithoutControl checks that a Redis the program did not
// start is never restarted: the scenario is reported as skipped.
func TestSkipsRestartWithoutControl(t *testing.T) {
	_, rdb := redistest.Single(t)
	e, err := newEnv(context.Background(), shortConfig(), rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := runScenario(context.Background(), e, restart())
	if err != nil {
		t.Fatal(err)
	}
	if r.skipped == "" || len(r.runs) != 0 {
		t.Fatalf("restart ran against a server it does not control: %+v", r)
	}
}

// TestRunRejectsBadInput checks that bad flags are errors, not panics.
func TestRunRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		mod        func(*config)
		only, plot string
	}{
		"unknown scenario": {only: "tornado"},
		"plot not svg":     {plot: "chart.png"},
		"zero rate":        {mod: func(c *config) { c.Rate = 0 }},
		"negative scale":   {mod: func(c *config) { c.Scale = -1 }},
		"no connections":   {mod: func(c *config) { c.DBConns = 0 }},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := shortConfig()
			if tc.mod != nil {
				tc.mod(&cfg)
			}
			// No Redis is needed: input is checked before connecting.
			if err := run(context.Background(), cfg, "127.0.0.1:1", tc.plot, tc.only, false, io.Discard); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// TestHistogramQuantiles pins the latency histogram's resolution.
func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}} {
		got := h.quantile(tc.q)
		if got < tc.want || got > tc.want*104/100 {
			t.Errorf("quantile(%v) = %v, want %v within 4%%", tc.q, got, tc.want)
		}
	}
}

// leftovers returns the stacks of goroutines still running code of this
// program or of the cache, other than the test's own.
func leftovers() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") {
			continue
		}
		if strings.Contains(g, "cacheguard/examples/storm.") || strings.Contains(g, "cacheguard/cache.") ||
			strings.Contains(g, "cacheguard/hotkey.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func sum(vs []int64) int64 {
	var n int64
	for _, v := range vs {
		n += v
	}
	return n
}
