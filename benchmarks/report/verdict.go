package main

// Verdicts: how cacheguard stands against another library, and whether a
// target is met. A verdict is given only where the intervals decide it;
// everything else is "inconclusive".

import (
	"fmt"
	"math"
	"strings"
)

// The words of a verdict, in the order the summary lists them.
const (
	statusMet          = "met"
	statusAhead        = "ahead"
	statusOnPar        = "on par"
	statusBehind       = "behind"
	statusMissed       = "missed"
	statusInconclusive = "inconclusive"
	statusNotMeasured  = "not measured yet"
)

var statusOrder = []string{statusMet, statusAhead, statusOnPar, statusBehind, statusMissed, statusInconclusive, statusNotMeasured}

// floorTolerance is how far from 1 a ratio may be and still be on par on a
// measure whose physical floor every library shares.
const floorTolerance = 0.05

// region decides a ratio (cacheguard's figure over the other's) known to
// lie in [lo, hi], where lower is better: ahead when the whole range is
// below 1 (with tol, below 1 − tol), behind when it is above 1 (1 + tol),
// on par when it lies within [1 − tol, 1 + tol] (with tol 0: the ratio is
// exactly 1, both figures equal and certain), inconclusive otherwise.
func region(lo, hi, tol float64) string {
	switch {
	case hi < 1-tol:
		return statusAhead
	case lo > 1+tol:
		return statusBehind
	case lo >= 1-tol && hi <= 1+tol:
		return statusOnPar
	default:
		return statusInconclusive
	}
}

// compare states how cacheguard's summary cg stands against the best other:
// from the range of the ratio of the two that their intervals allow.
// Without a shared floor that is ahead or behind exactly when the two
// intervals do not overlap; with one, the range must also clear the
// tolerance (or lie within it, for on par).
func compare(cg, best value, higherBetter, sharedFloor bool) string {
	ratio := ""
	if best.v != 0 {
		ratio = fmt.Sprintf(" (×%.2f)", math.Abs(cg.v/best.v))
	}
	cgLo, cgHi, ok1 := cg.interval()
	bLo, bHi, ok2 := best.interval()
	if !ok1 || !ok2 {
		return statusInconclusive + ": no interval" + ratio
	}
	if higherBetter {
		cgLo, cgHi, bLo, bHi = -cgHi, -cgLo, -bHi, -bLo
	}
	tol := 0.0
	if sharedFloor {
		tol = floorTolerance
	}
	var status string
	switch {
	case cgLo == cgHi && bLo == bHi && cgLo == bLo:
		status = statusOnPar // equal and certain, zero included
	case !sharedFloor || bLo <= 0 || cgLo < 0:
		// Separation of the intervals is the ratio's range excluding 1.
		switch {
		case cgHi < bLo:
			status = statusAhead
		case cgLo > bHi:
			status = statusBehind
		default:
			status = statusInconclusive
		}
	default:
		status = region(cgLo/bHi, cgHi/bLo, tol)
	}
	return status + ratio
}

// pairedUnit is the unit under which an interleaved benchmark reports, on
// a library's row, the paired ratio of cacheguard variant cg over that
// library on unit (interleave_test.go).
func pairedUnit(cg, unit string) string { return "ratio-" + cg + "-" + unit }

// comparePaired states how cacheguard stands on a paired ratio (its figure
// over the other library's in the same round), from the ratio's interval.
func comparePaired(ratio value, higherBetter, sharedFloor bool) string {
	text := fmt.Sprintf(" (×%.2f", ratio.v)
	if ci := strings.TrimPrefix(ratio.ci, "±"); ci != "" && ci != "0%" {
		text += " ±" + ci
	}
	text += " paired)"
	lo, hi, ok := ratio.interval()
	if !ok {
		return statusInconclusive + ": no interval" + text
	}
	if higherBetter {
		// A ratio of a higher-is-better figure: invert it.
		if lo <= 0 {
			if hi <= 0 {
				return statusInconclusive + text
			}
			lo, hi = 1/hi, math.Inf(1)
		} else {
			lo, hi = 1/hi, 1/lo
		}
	}
	tol := 0.0
	if sharedFloor {
		tol = floorTolerance
	}
	return region(lo, hi, tol) + text
}

// target is a bound a figure is held to.
type target struct {
	bound   float64
	atLeast bool // the figure must be ≥ bound (else ≤)
}

// decide states whether v meets the target: met when its whole interval
// is on the right side of the bound, missed when its whole interval is on
// the wrong side, inconclusive otherwise (and without an interval).
func (t target) decide(v value) string {
	lo, hi, ok := v.interval()
	if !ok {
		return statusInconclusive
	}
	if t.atLeast {
		lo, hi = -hi, -lo
		return target{bound: -t.bound}.decideRange(lo, hi)
	}
	return t.decideRange(lo, hi)
}

func (t target) decideRange(lo, hi float64) string {
	switch {
	case hi <= t.bound:
		return statusMet
	case lo > t.bound:
		return statusMissed
	default:
		return statusInconclusive
	}
}

// String is the target as written in the tables: "≤ ×1.05".
func (t target) String() string {
	if t.atLeast {
		return fmt.Sprintf("≥ ×%.2f", t.bound)
	}
	return fmt.Sprintf("≤ ×%.2f", t.bound)
}

// statusOf is the verdict word a cell starts with.
func statusOf(cell string) string {
	for _, s := range statusOrder {
		if strings.HasPrefix(cell, s) {
			return s
		}
	}
	return ""
}

// both combines two statuses of one target that must hold together: met
// only when both are met, missed when either is missed.
func both(a, b string) string {
	switch {
	case a == statusMissed || b == statusMissed:
		return statusMissed
	case a == statusMet && b == statusMet:
		return statusMet
	default:
		return statusInconclusive
	}
}
