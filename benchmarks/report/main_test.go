package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An interleaved benchmark's "<unit>@<library>" figures become one row per
// library, and its own figures are dropped.
func TestParseInterleaved(t *testing.T) {
	r, err := parseCSV([]byte(stampedeCSV("21.5,±6%", "23.0,±2%")))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.order, " "); got != "Stampede/procs=1/impl=cacheguard Stampede/procs=1/impl=jetcache" {
		t.Fatalf("rows %q", got)
	}
	if v := r.by["Stampede/procs=1/impl=jetcache"]["slowest-read-ms"]; v.v != 23 || v.ci != "±2%" {
		t.Fatalf("jetcache: %+v", v)
	}
	var out bytes.Buffer
	writeHeadline(&out, r)
	if !strings.Contains(out.String(), "| Stampede, 1 process × 200 | slowest reader (ms) | 21.5 ±6% | 23.0 ±2% (jetcache) |  | none on either side | inconclusive (×0.93) |") {
		t.Fatalf("headline:\n%s", out.String())
	}
}

// Rows are ahead or behind only when the intervals do not overlap, on par
// only when they say so, inconclusive otherwise.
func TestCompareByIntervals(t *testing.T) {
	for _, tc := range []struct {
		cg, best     value
		higherBetter bool
		sharedFloor  bool
		want         string
	}{
		{value{10, "±5%"}, value{20, "±5%"}, false, false, "ahead (×0.50)"},
		{value{20, "±5%"}, value{10, "±5%"}, false, false, "behind (×2.00)"},
		{value{10, "±30%"}, value{12, "±10%"}, false, false, "inconclusive (×0.83)"},
		{value{100, ""}, value{90, "±1%"}, true, false, "ahead (×1.11)"},
		{value{100, "∞"}, value{50, "±1%"}, false, false, "inconclusive: no interval (×2.00)"},
		{value{0, ""}, value{0, ""}, false, false, "on par"},
		{value{0, ""}, value{1, ""}, false, false, "ahead (×0.00)"},
		// Separate intervals within 5 %: behind, unless the floor is
		// shared; then on par when the ratio's whole range is within 5 %,
		// inconclusive when it straddles the bound.
		{value{104, "±0.5%"}, value{100, "±0.5%"}, false, false, "behind (×1.04)"},
		{value{103, "±0.5%"}, value{100, "±0.5%"}, false, true, "on par (×1.03)"},
		{value{104, "±0.5%"}, value{100, "±0.5%"}, false, true, "inconclusive (×1.04)"},
		{value{96, "±0.5%"}, value{100, "±0.5%"}, false, true, "on par (×0.96)"},
		// Beyond 5 % the intervals decide, shared floor or not.
		{value{110, "±1%"}, value{100, "±1%"}, false, true, "behind (×1.10)"},
		{value{110, "±20%"}, value{100, "±1%"}, false, true, "inconclusive (×1.10)"},
		// A verdict the old rule gave on ±1,820 % intervals.
		{value{74.1, "±76%"}, value{319.2, "±283%"}, false, false, "inconclusive (×0.23)"},
		{value{90, "±1%"}, value{100, "±1%"}, false, true, "ahead (×0.90)"},
	} {
		if got := compare(tc.cg, tc.best, tc.higherBetter, tc.sharedFloor); got != tc.want {
			t.Errorf("compare(%v, %v, %v, %v) = %q, want %q", tc.cg, tc.best, tc.higherBetter, tc.sharedFloor, got, tc.want)
		}
	}
}

// On an interleaved row the paired ratio decides: here the medians' own
// intervals overlap, but the ratio's interval lies below 1.
func TestHeadlineUsesPairedRatio(t *testing.T) {
	csv := stampedeCSV("21.5,±20%", "23.0,±20%") + `
,results/raw.txt
,ratio-cacheguard-slowest-read-ms@jetcache,CI
Stampede/procs=1-2,0.93,±2%
`
	r, err := parseCSV([]byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeHeadline(&out, r)
	if !strings.Contains(out.String(), "| Stampede, 1 process × 200 † | slowest reader (ms) | 21.5 ±20% | 23.0 ±20% (jetcache) |  | none on either side | ahead (×0.93 ±2% paired) |") {
		t.Fatalf("headline:\n%s", out.String())
	}
}

func TestComparePaired(t *testing.T) {
	for _, tc := range []struct {
		ratio        value
		higherBetter bool
		sharedFloor  bool
		want         string
	}{
		{value{0.9, "±5%"}, false, false, "ahead (×0.90 ±5% paired)"},
		{value{1.1, "±5%"}, false, false, "behind (×1.10 ±5% paired)"},
		{value{0.97, "±5%"}, false, false, "inconclusive (×0.97 ±5% paired)"},
		{value{0.99, "±33%"}, false, true, "inconclusive (×0.99 ±33% paired)"},
		{value{1.03, "±1%"}, false, true, "on par (×1.03 ±1% paired)"},
		{value{1.03, "±1%"}, false, false, "behind (×1.03 ±1% paired)"},
		{value{1.2, "±5%"}, true, false, "ahead (×1.20 ±5% paired)"},
		{value{0, ""}, false, false, "ahead (×0.00 paired)"},
		{value{0.5, "∞"}, false, false, "inconclusive: no interval (×0.50 ±∞ paired)"},
	} {
		if got := comparePaired(tc.ratio, tc.higherBetter, tc.sharedFloor); got != tc.want {
			t.Errorf("comparePaired(%v, %v, %v) = %q, want %q", tc.ratio, tc.higherBetter, tc.sharedFloor, got, tc.want)
		}
	}
}

// stampedeCSV is benchstat's CSV for a one-process stampede run in turns by
// cacheguard and jetcache, with their slowest reader ("median,CI") as given.
func stampedeCSV(cacheguard, jetcache string) string {
	return `goos: linux

,results/raw.txt
,sec/op,CI
Stampede/procs=1-2,1.5,±3%

,results/raw.txt
,slowest-read-ms@cacheguard,CI
Stampede/procs=1-2,` + cacheguard + `

,results/raw.txt
,slowest-read-ms@jetcache,CI
Stampede/procs=1-2,` + jetcache + `
`
}

// RESULTS.md is what the report writes from the summary kept in results/:
// nobody edited it by hand since run.sh wrote it.
func TestResultsFileIsGenerated(t *testing.T) {
	want, err := os.ReadFile("../RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("Command \\(in `benchmarks/`\\):\n\n```sh\n(.*)\n```").FindSubmatch(want)
	if m == nil {
		t.Fatal("RESULTS.md names no command")
	}
	data, err := os.ReadFile("../results/benchstat.csv")
	if err != nil {
		t.Fatal(err)
	}
	res, err := parseCSV(data)
	if err != nil {
		t.Fatal(err)
	}
	machine, err := os.ReadFile("../results/machine.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The chart goes to a directory of the test's; RESULTS.md links it by
	// its file name, which is the same.
	old := *curveChart
	*curveChart = filepath.Join(t.TempDir(), filepath.Base(old))
	t.Cleanup(func() { *curveChart = old })
	var got bytes.Buffer
	writeFile(&got, res, strings.TrimSpace(string(machine)), string(m[1]))
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("RESULTS.md differs from what go run ./report writes from results/: regenerate it with run.sh, do not edit it")
	}
}

// A failover row of the fault storms says, beside the library's line, that
// its stale reads are deletes Redis lost; the other faults' rows do not.
func TestFailoverRowsSayRedisLostDeletes(t *testing.T) {
	csv := `goos: linux

,results/raw.txt
,sec/op,CI
FaultStorm/fault=failover/tier=none-2,10,±3%
FaultStorm/fault=restart/tier=none-2,7,±3%

,results/raw.txt
,stale-reads@cacheguard,CI
FaultStorm/fault=failover/tier=none-2,2227,±50%
FaultStorm/fault=restart/tier=none-2,0,

,results/raw.txt
,stale-reads@jetcache,CI
FaultStorm/fault=failover/tier=none-2,5768,±40%
FaultStorm/fault=restart/tier=none-2,0,
`
	r, err := parseCSV([]byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, tb := range tables {
		if tb.prefix == "FaultStorm/" {
			writeTable(&out, r, tb)
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		failover, restart := strings.Contains(line, "`fault=failover/"), strings.Contains(line, "`fault=restart/")
		said := strings.Contains(line, "deletes Redis lost")
		if (failover && !said) || (restart && said) {
			t.Errorf("row %q", line)
		}
		if failover && !strings.Contains(line, configLine(implOf(strings.Trim(strings.Fields(line)[1], "`")))) {
			t.Errorf("row without its configuration: %q", line)
		}
	}
	if !strings.Contains(out.String(), "fault=failover/tier=none/impl=jetcache") {
		t.Fatalf("no failover rows:\n%s", out.String())
	}
}
