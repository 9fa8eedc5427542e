package main

import (
	"bytes"
	"strings"
	"testing"
)

// A target is met or missed only when the whole interval is on one side.
func TestTargetDecide(t *testing.T) {
	for _, tc := range []struct {
		t    target
		v    value
		want string
	}{
		{target{bound: 1.05}, value{1.0, "±2%"}, statusMet},
		{target{bound: 1.05}, value{1.047, "±2%"}, statusInconclusive}, // the old rule said met
		{target{bound: 1.05}, value{1.2, "±2%"}, statusMissed},
		{target{bound: 0.85, atLeast: true}, value{0.9, "±3%"}, statusMet},
		{target{bound: 0.85, atLeast: true}, value{0.86, "±3%"}, statusInconclusive},
		{target{bound: 0.85, atLeast: true}, value{0.6, "±10%"}, statusMissed},
		{target{bound: 0}, value{0, ""}, statusMet},
		{target{bound: 1}, value{0.5, "∞"}, statusInconclusive},
	} {
		if got := tc.t.decide(tc.v); got != tc.want {
			t.Errorf("%v.decide(%v) = %q, want %q", tc.t, tc.v, got, tc.want)
		}
	}
}

// coldCSV holds a cold storm cell without a local tier: cacheguard's
// cold/warm and loads per key, and its paired Gets/s over go-zero's.
const coldCSV = `goos: linux

,results/raw.txt
,sec/op,CI
ColdStorm/tier=none/g=64-2,1.5,±3%

,results/raw.txt
,cold/warm@cacheguard,CI
ColdStorm/tier=none/g=64-2,0.9,±2%

,results/raw.txt
,loads-per-key@cacheguard,CI
ColdStorm/tier=none/g=64-2,1,±0%

,results/raw.txt
,gets/s@cacheguard,CI
ColdStorm/tier=none/g=64-2,50000,±4%

,results/raw.txt
,gets/s@go-zero,CI
ColdStorm/tier=none/g=64-2,40000,±4%

,results/raw.txt
,ratio-cacheguard-gets/s@go-zero,CI
ColdStorm/tier=none/g=64-2,1.25,±3%

,results/raw.txt
,gets/s,CI
RedisHit/impl=sturdyc-2,1,±3%
LocalHit/impl=sturdyc-2,1,±3%
`

// The new tables: the cold storm's rows with the paired column and each
// library's configuration, its target met, the tables not yet run said
// so, and sturdyc's rows without a local tier left out.
func TestStormTablesAndSummary(t *testing.T) {
	r, err := parseCSV([]byte(coldCSV))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.by["RedisHit/impl=sturdyc"]; ok || r.by["LocalHit/impl=sturdyc"] == nil {
		t.Errorf("sturdyc rows: %v", r.order)
	}
	var out bytes.Buffer
	for _, tb := range stormTables {
		writeTable(&out, r, tb)
	}
	writeCeiling(&out, r)
	writeSummary(&out, r)
	for _, want := range []string{
		"| `tier=none/g=64/impl=go-zero` | 40000 ±4% |",
		"| 1.25 ±3% | " + configLine("go-zero") + " |",
		"Not measured yet: the results hold no `FaultStorm` rows.",
		"Not measured yet: the results hold no `Ceiling` row.",
		"**met** (1):\n\n- cold storm without a local tier, 64 goroutines: cold/warm, loads per key: ×0.90 ±2%, 1.00 loads per key (target ≥ ×0.85, exactly 1 load per key)",
		"- cold storm without a local tier, 256 goroutines: cold/warm, loads per key (target ≥ ×0.85, exactly 1 load per key)",
		"**not measured yet**",
		passCommand("ColdStorm"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// CPU per Get is the lowest only when every paired ratio lies below 1.
func TestCPUTarget(t *testing.T) {
	csv := `goos: linux

,results/raw.txt
,sec/op,CI
CPUPerGet/g=64-2,1.5,±3%
CPUPerGet/g=256-2,1.5,±3%

,results/raw.txt
,ratio-cacheguard-cpu-us/get@go-zero,CI
CPUPerGet/g=64-2,0.8,±5%
CPUPerGet/g=256-2,0.8,±5%

,results/raw.txt
,ratio-cacheguard-cpu-us/get@rueidis,CI
CPUPerGet/g=64-2,0.99,±5%
CPUPerGet/g=256-2,1.2,±5%

,results/raw.txt
,ratio-cacheguard-cpu-us/get@go-redis-GET+json,CI
CPUPerGet/g=64-2,1.5,±5%
CPUPerGet/g=256-2,1.5,±5%
`
	r, err := parseCSV([]byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	rows := cpuTargetRows(r)
	if len(rows) != 2 || rows[0].status != statusInconclusive || rows[1].status != statusMissed {
		t.Fatalf("rows %+v", rows)
	}
	if !strings.Contains(rows[1].figure, "against rueidis") {
		t.Errorf("figure %q names not the worst peer (the bare GET is no peer)", rows[1].figure)
	}
}
