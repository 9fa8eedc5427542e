package main

import (
	"bytes"
	"fmt"
	"math"
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
	{workload: "Redis hit, serial, MessagePack", measure: "time per Get", unit: "sec/op", prefix: "RedisHitSerial/", cacheguard: "cacheguard+msgpack", exclude: []string{"go-redis-GET+json", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "sturdyc"}, sharedFloor: true, format: fmtTime},
	{workload: "Local hit, serial", measure: "time per Get", unit: "sec/op", prefix: "LocalHit/", cacheguard: "cacheguard", exclude: []string{"ristretto", "otter"}, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, local tier admitting every key", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier admitting every key", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, Redis only, JSON", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "sturdyc+local", "go-redis-cache", "jetcache"}, format: fmtTime},
	{workload: "Zipfian, Redis only, MessagePack", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+msgpack", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "sturdyc+local", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "sturdyc"}, format: fmtTime},
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
var zipfRedisOnly = []string{"go-zero", "rockscache", "gocache", "go-redis-cache", "go-redis-cache+json", "jetcache", "jetcache+json", "rueidis", "sturdyc"}

func writeHeadline(w *bytes.Buffer, r *results) {
	fmt.Fprintln(w, "### Headline")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against its own targets:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | cacheguard / baseline | target |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	if v, ok := r.get("Paired/path=redis-hit/cacheguard-vs-go-redis-GET+json", "ratio"); ok {
		fmt.Fprintf(w, "| Redis hit vs go-redis GET + json.Unmarshal (paired) | ×%.3f | ≤ ×1.05 (%s) |\n", v, met(v <= 1.05))
	}
	if v, ok := r.get("Paired/path=local-hit/cacheguard-vs-ristretto", "ratio"); ok {
		allocs, _ := r.get("LocalHit/impl=cacheguard", "allocs/op")
		fmt.Fprintf(w, "| local hit vs raw ristretto Get (paired) | ×%.2f, %s allocs/op | ≤ ×1.3, 0 allocs (%s) |\n", v, fmtNum(allocs), met(v <= 1.3 && allocs == 0))
	}
	nl, ok1 := r.get("Zipfian/impl=cacheguard", "sec/op")
	hk, ok2 := r.get("Zipfian/impl=cacheguard+hotkeys", "sec/op")
	rtNL, ok3 := r.get("Zipfian/impl=cacheguard", "redis-roundtrips/op")
	rtHK, ok4 := r.get("Zipfian/impl=cacheguard+hotkeys", "redis-roundtrips/op")
	if ok1 && ok2 && ok3 && ok4 && hk > 0 && rtNL > 0 {
		fmt.Fprintf(w, "| zipfian reads with hot-key promotion vs without a local tier | ×%.2f throughput, %.0f %% of Redis round trips saved | more throughput, fewer round trips |\n",
			nl/hk, 100*(1-rtHK/rtNL))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against the best of the other libraries on each workload (medians ± their 90 % confidence intervals; `ahead`/`behind` only when the two intervals do not overlap, `on par` otherwise, and also within 5 % on the rows marked * whose physical floor every library shares, one round trip per Redis hit; with the ratio of the medians). A local tier is compared at the others' capacity: they keep up to 10 000 rows, and so does cacheguard's hot-key tier (k = 10 000 promoted rows); the smaller setting k = 1000 of the zipfian table below keeps a tenth as many rows and makes correspondingly more round trips. On the rows marked †, the libraries took turns in one loop: there the verdict comes from the paired ratio instead, cacheguard's figure over the other's in the same round, whose median over the rounds of a pass and interval over the passes are given (`ahead`/`behind` when that interval excludes 1):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | measure | cacheguard | best other | raw go-redis | cacheguard vs best |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, h := range headlines {
		cg, ok := r.get(h.prefix+"impl="+h.cacheguard, h.unit)
		if !ok {
			continue
		}
		cgv := r.by[h.prefix+"impl="+h.cacheguard][h.unit]
		bestName, best, found := "", 0.0, false
		var bestv value
		for _, n := range r.rows(h.prefix) {
			impl := implOf(n)
			// Other libraries only: not cacheguard's variants, not the
			// baselines, not the raw go-redis column, not parallel runs.
			if impl == "" || strings.HasPrefix(impl, "cacheguard") || impl == "go-redis" ||
				contains(h.exclude, impl) || strings.Contains(strings.TrimPrefix(n, h.prefix), "/") {
				continue
			}
			v, ok := r.get(n, h.unit)
			if !ok {
				continue
			}
			if !found || (h.higherBetter && v > best) || (!h.higherBetter && v < best) {
				bestName, best, found = impl, v, true
				bestv = r.by[n][h.unit]
			}
		}
		naive := ""
		if v, ok := r.get(h.prefix+"impl=go-redis", h.unit); ok {
			naive = h.format(v)
		}
		bestCell, verdict := "", ""
		paired := false
		if found {
			bestCell = fmt.Sprintf("%s (%s)", withCI(h.format(best), bestv), bestName)
			verdict = compare(cgv, bestv, h.higherBetter, h.sharedFloor)
			if pr, ok := r.by[h.prefix+"impl="+bestName][pairedUnit(h.cacheguard, h.unit)]; ok {
				verdict, paired = comparePaired(pr, h.higherBetter, h.sharedFloor), true
			}
		}
		workload := h.workload
		if h.sharedFloor {
			workload += " *"
		}
		if paired {
			workload += " †"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", workload, h.measure, withCI(h.format(cg), cgv), bestCell, naive, verdict)
	}
	fmt.Fprintln(w)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
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

// floorTolerance is how far apart two medians may be and still be on par
// on a measure whose physical floor every library shares.
const floorTolerance = 0.05

// compare states how cacheguard's summary cg stands against the best other:
// ahead or behind only when their confidence intervals do not overlap and,
// with sharedFloor, the medians differ by more than floorTolerance.
func compare(cg, best value, higherBetter, sharedFloor bool) string {
	cgLo, cgHi, ok1 := cg.interval()
	bLo, bHi, ok2 := best.interval()
	if higherBetter {
		cgLo, cgHi, bLo, bHi = -cgHi, -cgLo, -bHi, -bLo
	}
	ratio := ""
	if best.v != 0 {
		ratio = fmt.Sprintf(" (×%.2f)", math.Abs(cg.v/best.v))
	}
	switch {
	case sharedFloor && best.v != 0 && math.Abs(cg.v/best.v-1) <= floorTolerance:
		return "on par" + ratio
	case !ok1 || !ok2:
		return "undecided: no interval" + ratio
	case cgHi < bLo:
		return "ahead" + ratio
	case cgLo > bHi:
		return "behind" + ratio
	default:
		return "on par" + ratio
	}
}

// pairedUnit is the unit under which an interleaved benchmark reports, on
// a library's row, the paired ratio of cacheguard variant cg over that
// library on unit (interleave_test.go).
func pairedUnit(cg, unit string) string { return "ratio-" + cg + "-" + unit }

// comparePaired states how cacheguard stands on a paired ratio (its figure
// over the other library's in the same round): ahead or behind only when
// the ratio's interval excludes 1 and, with sharedFloor, its median is
// more than floorTolerance away from 1.
func comparePaired(ratio value, higherBetter, sharedFloor bool) string {
	lo, hi, ok := ratio.interval()
	text := fmt.Sprintf(" (×%.2f", ratio.v)
	if ci := strings.TrimPrefix(ratio.ci, "±"); ci != "" && ci != "0%" {
		text += " ±" + ci
	}
	text += " paired)"
	better, worse := hi < 1, lo > 1
	if higherBetter {
		better, worse = lo > 1, hi < 1
	}
	switch {
	case sharedFloor && math.Abs(ratio.v-1) <= floorTolerance:
		return "on par" + text
	case !ok:
		return "undecided: no interval" + text
	case better:
		return "ahead" + text
	case worse:
		return "behind" + text
	default:
		return "on par" + text
	}
}
