package main

// cacheguard's own targets: on its hit paths, the cold storm and CPU per
// Get, each decided by its interval (verdict.go), or "not measured yet"
// when the results lack its rows.

import (
	"fmt"
	"strings"
)

// targetRow is one target, decided.
type targetRow struct {
	what, figure, target, status string
}

// notMeasured is the row of a target whose figures the results do not hold.
func notMeasured(what, tgt string) targetRow {
	return targetRow{what: what, figure: "", target: tgt, status: statusNotMeasured}
}

// ownTargets are the hit-path targets of the headline.
func ownTargets(r *results) []targetRow {
	var out []targetRow

	what := "Redis hit vs go-redis GET + json.Unmarshal (paired)"
	redisHit := target{bound: 1.05}
	if v, ok := r.by["Paired/path=redis-hit/cacheguard-vs-go-redis-GET+json"]["ratio"]; ok {
		out = append(out, targetRow{what, withCI(fmt.Sprintf("×%.3f", v.v), v), redisHit.String(), redisHit.decide(v)})
	} else {
		out = append(out, notMeasured(what, redisHit.String()))
	}

	what = "local hit vs raw ristretto Get (paired)"
	localHit := target{bound: 1.3}
	if v, ok := r.by["Paired/path=local-hit/cacheguard-vs-ristretto"]["ratio"]; ok {
		allocs, hasAllocs := r.by["LocalHit/impl=cacheguard"]["allocs/op"]
		allocStatus := statusNotMeasured
		if hasAllocs {
			allocStatus = target{bound: 0}.decide(allocs)
		}
		status := both(localHit.decide(v), allocStatus)
		if allocStatus == statusNotMeasured {
			status = statusInconclusive
		}
		out = append(out, targetRow{what, fmt.Sprintf("%s, %s allocs/op", withCI(fmt.Sprintf("×%.2f", v.v), v), fmtNum(allocs.v)),
			localHit.String() + ", 0 allocs", status})
	} else {
		out = append(out, notMeasured(what, localHit.String()+", 0 allocs"))
	}

	what = "zipfian reads with hot-key promotion vs without a local tier"
	tgt := "more throughput, fewer round trips"
	nl, ok1 := r.by["Zipfian/impl=cacheguard"]["sec/op"]
	hk, ok2 := r.by["Zipfian/impl=cacheguard+hotkeys"]["sec/op"]
	rtNL, ok3 := r.by["Zipfian/impl=cacheguard"]["redis-roundtrips/op"]
	rtHK, ok4 := r.by["Zipfian/impl=cacheguard+hotkeys"]["redis-roundtrips/op"]
	if ok1 && ok2 && ok3 && ok4 && hk.v > 0 && rtNL.v > 0 {
		// Both must be better beyond the intervals: the hot-key run is
		// "ahead" of the run without a local tier on each.
		status := both(asTarget(statusOf(compare(hk, nl, false, false))), asTarget(statusOf(compare(rtHK, rtNL, false, false))))
		out = append(out, targetRow{what, fmt.Sprintf("×%.2f throughput, %.0f %% of Redis round trips saved", nl.v/hk.v, 100*(1-rtHK.v/rtNL.v)), tgt, status})
	} else {
		out = append(out, notMeasured(what, tgt))
	}

	what = "serial Redis hit vs rueidis (paired, libraries taking turns)"
	serial := target{bound: 1 + floorTolerance}
	if v, ok := r.by["RedisHitSerial/impl=rueidis"][pairedUnit("cacheguard", "sec/op")]; ok {
		out = append(out, targetRow{what, withCI(fmt.Sprintf("×%.2f", v.v), v), serial.String() + " (on par at least)", serial.decide(v)})
	} else {
		out = append(out, notMeasured(what, serial.String()+" (on par at least)"))
	}
	return out
}

// asTarget reads a comparison's verdict as a target's: ahead meets it,
// behind or on par misses it.
func asTarget(status string) string {
	switch status {
	case statusAhead:
		return statusMet
	case statusBehind, statusOnPar:
		return statusMissed
	}
	return statusInconclusive
}

// cpuBaselines are the rows of the CPU table that are not peers: bare
// clients without cache logic.
var cpuBaselines = []string{"go-redis-GET+json", "go-redis-autopipeline"}

// cpuTargetRows: the lowest CPU per Redis-hit Get of all peers at 64 and
// 256 goroutines, decided by cacheguard's paired ratio to each peer (met
// when every ratio's interval lies below 1, missed when one lies above).
func cpuTargetRows(r *results) []targetRow {
	var out []targetRow
	for _, g := range []string{"64", "256"} {
		what := "CPU per Redis-hit Get, " + g + " goroutines: the lowest of all peers (paired)"
		tgt := "< ×1.00 against each"
		status, worst, worstLib, seen := statusMet, value{}, "", false
		for _, n := range r.rows(cpuPrefix + "g=" + g + "/") {
			impl := implOf(n)
			if strings.HasPrefix(impl, "cacheguard") || contains(cpuBaselines, impl) {
				continue
			}
			v, ok := r.by[n][pairedUnit("cacheguard", "cpu-us/get")]
			if !ok {
				continue
			}
			seen = true
			lo, hi, hasCI := v.interval()
			switch {
			case hasCI && lo >= 1:
				status = statusMissed
			case (!hasCI || hi >= 1) && status == statusMet:
				status = statusInconclusive
			}
			if worstLib == "" || v.v > worst.v {
				worst, worstLib = v, impl
			}
		}
		if !seen {
			out = append(out, notMeasured(what, tgt))
			continue
		}
		out = append(out, targetRow{what, fmt.Sprintf("highest ratio %s (against %s)", withCI(fmt.Sprintf("×%.2f", worst.v), worst), worstLib), tgt, status})
	}
	return out
}

// stormTargetRows: a cold storm without a local tier at a cold/warm ratio
// of at least 0.85 at 64 and 256 goroutines, with exactly one load per key.
func stormTargetRows(r *results) []targetRow {
	var out []targetRow
	ratio := target{bound: 0.85, atLeast: true}
	for _, g := range []string{"64", "256"} {
		what := "cold storm without a local tier, " + g + " goroutines: cold/warm, loads per key"
		tgt := ratio.String() + ", exactly 1 load per key"
		row := r.by["ColdStorm/tier=none/g="+g+"/impl=cacheguard"]
		cw, ok1 := row["cold/warm"]
		loads, ok2 := row["loads-per-key"]
		if !ok1 || !ok2 {
			out = append(out, notMeasured(what, tgt))
			continue
		}
		loadStatus := statusInconclusive
		if lo, hi, ok := loads.interval(); ok {
			switch {
			case lo == 1 && hi == 1:
				loadStatus = statusMet
			case lo > 1 || hi < 1:
				loadStatus = statusMissed
			}
		}
		out = append(out, targetRow{what, fmt.Sprintf("%s, %s loads per key", withCI(fmt.Sprintf("×%.2f", cw.v), cw), withCI(fmtNum(loads.v), loads)), tgt, both(ratio.decide(cw), loadStatus)})
	}
	return out
}
