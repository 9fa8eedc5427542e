package benchmarks

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Scenario benchmarks that run in rounds (a stampede, a mass-expiry cycle)
// run every library in one loop rather than one library after another:
// iteration i runs one round of each, starting with library i mod n, so that
// all of them see the same stretch of a shared machine and none is always
// first. Each library's figures are the medians of its rounds, reported as
// "<unit>@<library>"; the report command files them under
// "<benchmark>/impl=<library>", as if each library had its own benchmark.
//
// The medians of two libraries come from the same rounds, but a pass's
// median still moves with the machine. What two libraries' rounds share is
// the stretch of machine they ran in, so each cacheguard variant's figure
// is also divided by every other library's in the same round, and the
// median of those ratios reported as "ratio-<variant>-<unit>@<library>":
// the headline compares by that paired ratio (report/main.go).

// minRounds is how many rounds of every library a pass of an interleaved
// benchmark aims at, so that its medians are medians of several rounds.
const minRounds = 5

// extraRoundsBudget bounds the time a benchmark spends on rounds beyond
// those b.Loop asked for: a round of the mass-expiry cycles (3.4 s per
// library, seven libraries) takes about 24 s, so a pass gets three of them
// and its median is not one cycle's chance.
const extraRoundsBudget = 60 * time.Second

// roundMetrics are one round's figures, by unit.
type roundMetrics map[string]float64

// interleaved runs round for every library on each iteration of b.Loop and
// reports the per-library medians.
func interleaved(b *testing.B, libs []string, round func(lib int) roundMetrics) {
	samples := newSamples(len(libs))
	i, start := 0, time.Now()
	for ; b.Loop(); i++ {
		takeTurns(samples, i, round)
	}
	// A round of every library can take longer than -benchtime (a
	// stampede of three processes each), so that b.Loop stops after one
	// and a pass gives each library a single sample: add rounds, untimed,
	// up to minRounds as long as the benchmark has run less than
	// extraRoundsBudget (a quick run, figures meaningless, adds none).
	for ; !quick() && i < minRounds && time.Since(start) < extraRoundsBudget; i++ {
		takeTurns(samples, i, round)
	}
	reportRounds(b, libs, samples)
}

// newSamples returns empty per-library samples for n libraries.
func newSamples(n int) []map[string][]float64 {
	samples := make([]map[string][]float64, n)
	for i := range samples {
		samples[i] = map[string][]float64{}
	}
	return samples
}

// takeTurns runs round i: one round of every library, starting with
// library i mod n, adding its figures to samples.
func takeTurns(samples []map[string][]float64, i int, round func(lib int) roundMetrics) {
	for j := range samples {
		l := (i + j) % len(samples)
		for unit, v := range round(l) {
			samples[l][unit] = append(samples[l][unit], v)
		}
	}
}

// reportRounds reports the paired ratios, then every library's median of
// each unit as "<unit>@<library>".
func reportRounds(b *testing.B, libs []string, samples []map[string][]float64) {
	reportPairedRatios(b, libs, samples)
	for l, lib := range libs {
		units := make([]string, 0, len(samples[l]))
		for u := range samples[l] {
			units = append(units, u)
		}
		sort.Strings(units)
		for _, u := range units {
			b.ReportMetric(median(samples[l][u]), u+"@"+lib)
		}
	}
}

// reportPairedRatios reports, for each cacheguard variant and each other
// library, the median over rounds of the variant's figure over the library's
// in the same round. Rounds where the library's figure is 0 give no ratio.
// It runs before the medians, which sort the samples.
func reportPairedRatios(b *testing.B, libs []string, samples []map[string][]float64) {
	for c, cg := range libs {
		if !strings.HasPrefix(cg, "cacheguard") {
			continue
		}
		units := make([]string, 0, len(samples[c]))
		for u := range samples[c] {
			units = append(units, u)
		}
		sort.Strings(units)
		for l, lib := range libs {
			if strings.HasPrefix(lib, "cacheguard") {
				continue
			}
			for _, u := range units {
				mine, theirs := samples[c][u], samples[l][u]
				var ratios []float64
				for r := range min(len(mine), len(theirs)) {
					if theirs[r] != 0 {
						ratios = append(ratios, mine[r]/theirs[r])
					}
				}
				if len(ratios) > 0 {
					b.ReportMetric(median(ratios), "ratio-"+cg+"-"+u+"@"+lib)
				}
			}
		}
	}
}

// median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}
