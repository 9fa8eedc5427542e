package main

import (
	"bytes"
	"fmt"
	"strings"
)

// The headline compares cacheguard with the best of the other libraries on
// the measure each workload is about.

type headline struct {
	workload, measure string
	unit              string
	prefix            string // rows compared: prefix + "impl=" + library
	cacheguard        string // cacheguard's impl name
	exclude           []string
	higherBetter      bool
	// sharedFloor: every library pays the same physical floor on this
	// measure (one round trip per Redis hit), so medians within
	// floorTolerance of each other are on par even when their intervals
	// separate: what is left to compare is noise around the round trip.
	sharedFloor bool
	// format renders a value of unit.
	format func(float64) string
}

var headlines = []headline{
	{workload: "Redis hit, serial, JSON", measure: "time per Get", unit: "sec/op", prefix: "RedisHitSerial/", cacheguard: "cacheguard", exclude: []string{"go-redis-GET+json", "go-redis-cache", "jetcache"}, sharedFloor: true, format: fmtTime},
	{workload: "Redis hit, serial, MessagePack", measure: "time per Get", unit: "sec/op", prefix: "RedisHitSerial/", cacheguard: "cacheguard+msgpack", exclude: []string{"go-redis-GET+json", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "rueidisaside", "sturdyc"}, sharedFloor: true, format: fmtTime},
	{workload: "Local hit, serial", measure: "time per Get", unit: "sec/op", prefix: "LocalHit/", cacheguard: "cacheguard", exclude: []string{"ristretto", "otter"}, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, local tier admitting every key", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier admitting every key", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, Redis only, JSON", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "rueidisaside+local", "sturdyc+local", "go-redis-cache", "jetcache"}, format: fmtTime},
	{workload: "Zipfian, Redis only, MessagePack", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+msgpack", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "rueidisaside+local", "sturdyc+local", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "rueidisaside", "sturdyc"}, format: fmtTime},
	{workload: "Stampede, 3 processes × 200", measure: "DB loads per stampede", unit: "db-loads/op", prefix: "Stampede/procs=3/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Stampede, 3 processes × 200", measure: "slowest reader (ms)", unit: "slowest-read-ms", prefix: "Stampede/procs=3/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Stampede, 1 process × 200", measure: "slowest reader (ms)", unit: "slowest-read-ms", prefix: "Stampede/procs=1/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Penetration, repeated absent ids", measure: "DB loads per read", unit: "db-loads/op", prefix: "Penetration/absent=repeat/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Penetration, unique absent ids", measure: "DB loads per read", unit: "db-loads/op", prefix: "Penetration/absent=unique/", cacheguard: "cacheguard+bloom", format: fmtNum},
	{workload: "Mass expiry", measure: "peak DB queries/s", unit: "db-peak-qps", prefix: "MassExpiry/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Mass expiry", measure: "p99 read latency (ms)", unit: "p99-read-ms", prefix: "MassExpiry/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Invalidation race", measure: "stale reads in a 1 s run", unit: "stale-reads/op", prefix: "InvalidationRace/", cacheguard: "cacheguard", format: fmtNum},
}

// zipfRedisOnly are the zipfian rows without a local tier, which the rows
// about local tiers leave out.
var zipfRedisOnly = []string{"go-zero", "rockscache", "gocache", "go-redis-cache", "go-redis-cache+json", "jetcache", "jetcache+json", "rueidis", "rueidisaside", "sturdyc"}

// headlineRow is one comparison of the headline, decided.
type headlineRow struct {
	h                        headline
	cg, best, naive, verdict string
	bestName                 string
	paired, found            bool
}

// headlineRows decides every headline comparison the results hold.
func headlineRows(r *results) []headlineRow {
	var out []headlineRow
	for _, h := range headlines {
		cgv, ok := r.by[h.prefix+"impl="+h.cacheguard][h.unit]
		if !ok {
			continue
		}
		row := headlineRow{h: h, cg: withCI(h.format(cgv.v), cgv)}
		var best, bestv value
		for _, n := range r.rows(h.prefix) {
			impl := implOf(n)
			// Other libraries only: not cacheguard's variants, not the
			// baselines, not the raw go-redis column, not parallel runs.
			if impl == "" || strings.HasPrefix(impl, "cacheguard") || impl == "go-redis" ||
				contains(h.exclude, impl) || strings.Contains(strings.TrimPrefix(n, h.prefix), "/") {
				continue
			}
			v, ok := r.by[n][h.unit]
			if !ok {
				continue
			}
			if !row.found || (h.higherBetter && v.v > best.v) || (!h.higherBetter && v.v < best.v) {
				row.bestName, best, row.found = impl, v, true
				bestv = v
			}
		}
		if v, ok := r.get(h.prefix+"impl=go-redis", h.unit); ok {
			row.naive = h.format(v)
		}
		if row.found {
			row.best = fmt.Sprintf("%s (%s)", withCI(h.format(best.v), bestv), row.bestName)
			row.verdict = compare(cgv, bestv, h.higherBetter, h.sharedFloor)
			if pr, ok := r.by[h.prefix+"impl="+row.bestName][pairedUnit(h.cacheguard, h.unit)]; ok {
				row.verdict, row.paired = comparePaired(pr, h.higherBetter, h.sharedFloor), true
			}
		}
		out = append(out, row)
	}
	return out
}

// label is the row's workload with its marks.
func (row headlineRow) label() string {
	workload := row.h.workload
	if row.h.sharedFloor {
		workload += " *"
	}
	if row.paired {
		workload += " †"
	}
	return workload
}

func writeHeadline(w *bytes.Buffer, r *results) {
	fmt.Fprintln(w, "### Headline")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against its own targets (`met` when the figure's whole 90 % interval is on the right side of the bound, `missed` when it is wholly on the wrong side, `inconclusive` otherwise):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | cacheguard / baseline | target | verdict |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, t := range ownTargets(r) {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.what, t.figure, t.target, t.status)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against the best of the other libraries on each workload (medians ± their 90 % confidence intervals, with the ratio of the medians). A verdict is given only where the intervals decide it: `ahead`/`behind` when the two intervals do not overlap, `on par` only for equal figures without spread, `inconclusive` otherwise. On the rows marked *, whose physical floor every library shares (one round trip per Redis hit), a difference within 5 % does not count: `on par` when the whole range of the ratio the intervals allow lies within ±5 %, `ahead`/`behind` when it lies wholly beyond, `inconclusive` when it straddles a bound. A local tier is compared at the others' capacity: they keep up to 10 000 rows, and so does cacheguard's hot-key tier (k = 10 000 promoted rows); the smaller setting k = 1000 of the zipfian table below keeps a tenth as many rows and makes correspondingly more round trips. On the rows marked †, the libraries took turns in one loop: there the verdict comes from the paired ratio instead, cacheguard's figure over the other's in the same round, whose median over the rounds of a pass and interval over the passes are given (the same rules applied to that interval). The Bloom filter column says which side had one:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | measure | cacheguard | best other | raw go-redis | Bloom filter | cacheguard vs best |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range headlineRows(r) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", row.label(), row.h.measure, row.cg, row.best, row.naive, bloomUse(row.h.cacheguard), row.verdict)
	}
	fmt.Fprintln(w)
}

// bloomUse says which side of a comparison had a Bloom filter: only
// cacheguard's +bloom variant has one; no other library offers one.
func bloomUse(cacheguard string) string {
	if strings.Contains(cacheguard, "+bloom") {
		return "cacheguard only (local, 1 % false positives; no other library has one)"
	}
	return "none on either side"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// withCI appends a summary's interval to a formatted cell.
func withCI(cell string, v value) string {
	if cell == "" {
		return ""
	}
	switch ci := strings.TrimPrefix(v.ci, "±"); ci {
	case "", "0%":
		return cell
	default:
		return cell + " ±" + ci
	}
}
