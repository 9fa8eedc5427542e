package main

// The benchmark results as benchstat summarised them, read from its CSV.

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// value is one benchstat summary: the median and its confidence interval.
type value struct {
	v  float64
	ci string
}

// results maps a benchmark name (without the -GOMAXPROCS suffix) and a unit
// to its summary; order keeps the names in the order benchstat gave them.
type results struct {
	by    map[string]map[string]value
	order []string
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseCSV reads benchstat's CSV: blocks separated by blank lines, each with
// a header naming the unit, then "name,value,CI" rows.
func parseCSV(data []byte) (*results, error) {
	r := &results{by: map[string]map[string]value{}}
	interleavedParents := map[string]bool{}
	unit := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			unit = ""
			continue
		case !strings.Contains(line, ","):
			continue // goos: … and the like
		}
		f := strings.Split(line, ",")
		if f[0] == "" {
			if len(f) >= 2 && f[1] != "" && !strings.Contains(f[1], ".txt") {
				unit = f[1]
			}
			continue
		}
		if unit == "" || f[0] == "geomean" || len(f) < 2 || f[1] == "" {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		u := unit
		// An interleaved benchmark reports each library's figures as
		// "<unit>@<library>": file them as that library's own row.
		if base, lib, ok := strings.Cut(unit, "@"); ok {
			interleavedParents[name] = true
			name, u = name+"/impl="+lib, base
		}
		if r.by[name] == nil {
			r.by[name] = map[string]value{}
			r.order = append(r.order, name)
		}
		ci := ""
		if len(f) >= 3 {
			ci = f[2]
		}
		r.by[name][u] = value{v, ci}
	}
	// The interleaved benchmarks' own figures (time for all libraries
	// together) mean nothing by themselves: each gives way to its
	// libraries' rows, in table order.
	var order []string
	for _, n := range r.order {
		switch {
		case interleavedParents[n]:
			for _, lib := range libraryOrder(r, n) {
				order = append(order, n+"/impl="+lib)
			}
			delete(r.by, n)
		case interleavedParents[parentOf(n)]:
			// placed with its parent
		default:
			order = append(order, n)
		}
	}
	r.order = order
	r.dropRetired()
	return r, sc.Err()
}

// dropRetired leaves out the rows of configurations no longer run: sturdyc
// without a local tier (it ran with a 1 ns memory TTL before it ran only
// with its memory tier). Its local-hit rows stay.
func (r *results) dropRetired() {
	order := r.order[:0]
	for _, n := range r.order {
		if implOf(n) == "sturdyc" && !strings.HasPrefix(n, "LocalHit/") {
			delete(r.by, n)
			continue
		}
		order = append(order, n)
	}
	r.order = order
}

// tableLibraries is the order of the libraries in the tables (as in the
// benchmarks' libraries()); others follow in name order.
var tableLibraries = []string{"go-redis-GET+json", "go-redis-autopipeline", "cacheguard", "cacheguard+msgpack", "go-zero", "rockscache", "gocache", "go-redis-cache", "go-redis-cache+json", "jetcache", "jetcache+json", "rueidis", "rueidisaside", "sturdyc", "go-redis"}

// libraryOrder lists the libraries with rows under an interleaved parent.
func libraryOrder(r *results, parent string) []string {
	var libs []string
	for n := range r.by {
		if parentOf(n) == parent {
			libs = append(libs, implOf(n))
		}
	}
	rank := func(lib string) int {
		if i := slices.Index(tableLibraries, lib); i >= 0 {
			return i
		}
		return len(tableLibraries)
	}
	slices.SortFunc(libs, func(a, b string) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return libs
}

// parentOf is a row name without its last "/impl=" part.
func parentOf(name string) string {
	if i := strings.LastIndex(name, "/impl="); i >= 0 {
		return name[:i]
	}
	return ""
}

func (r *results) get(name, unit string) (float64, bool) {
	v, ok := r.by[name][unit]
	return v.v, ok
}

// interval returns the bounds of a summary's confidence interval, or false
// when benchstat could not give one (too few samples).
func (v value) interval() (lo, hi float64, ok bool) {
	ci := strings.TrimPrefix(v.ci, "±")
	if ci == "" || ci == "0%" {
		return v.v, v.v, true
	}
	p, err := strconv.ParseFloat(strings.TrimSuffix(ci, "%"), 64)
	if err != nil || !strings.HasSuffix(ci, "%") {
		return 0, 0, false // "∞", "?"
	}
	d := math.Abs(v.v) * p / 100
	return v.v - d, v.v + d, true
}

// rows returns the names under prefix, in benchstat's order.
func (r *results) rows(prefix string) []string {
	var out []string
	for _, n := range r.order {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
