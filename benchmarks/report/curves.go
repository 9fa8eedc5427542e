package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cacheguard/cacheguard/internal/svgplot"
)

// The concurrency curves (curve_test.go, batch_test.go in the benchmarks):
// tables of reads/s and p99 by goroutines, the targets they are held to,
// and a chart of reads/s against goroutines written beside the results.

var curveChart = flag.String("chart", "curves.svg", "where to write the chart of the concurrency curves (linked from the results by its file name)")

const (
	curvePrefix   = "Curve/"
	clusterPrefix = "CurveCluster/"
	batchPrefix   = "BatchRead/"
)

var curveDists = []string{"uniform", "zipfian"}

// curveCell is a row's name in a curve: <prefix>dist=<d>/g=<g>/impl=<lib>.
func curveCell(prefix, dist string, g int, lib string) string {
	return fmt.Sprintf("%sdist=%s/g=%d/impl=%s", prefix, dist, g, lib)
}

// curveAxes lists the goroutine counts and the libraries measured under
// prefix for dist, in the order benchstat gave them (libraries in table
// order).
func curveAxes(r *results, prefix, dist string) (gs []int, libs []string) {
	for _, n := range r.rows(prefix + "dist=" + dist + "/") {
		rest := strings.TrimPrefix(n, prefix+"dist="+dist+"/g=")
		gStr, _, ok := strings.Cut(rest, "/")
		g, err := strconv.Atoi(gStr)
		if !ok || err != nil {
			continue
		}
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
		if lib := implOf(n); !slices.Contains(libs, lib) {
			libs = append(libs, lib)
		}
	}
	slices.Sort(gs)
	return gs, libs
}

// writeCurves writes the curve tables and the chart, when the results have
// curves.
func writeCurves(w *bytes.Buffer, r *results) {
	if len(r.rows(curvePrefix)) == 0 && len(r.rows(batchPrefix)) == 0 {
		return
	}
	fmt.Fprintln(w, "### Redis hit under concurrency")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Rows already in Redis (10 000 JSON rows; no local tier) read by a growing number of goroutines, uniformly or along a zipfian trace (s = 1.1). In each cell every library runs 5 rounds of 200 ms, the libraries taking turns; reads/s and the p99 latency of the reads in µs are each library's medians over the rounds, and cacheguard's ratios to the others the medians of its figure over theirs in the same round. `go-redis-GET+json` is a bare GET through go-redis's connection pool and json.Unmarshal; `go-redis-autopipeline` the same through go-redis's AutoPipeliner.")
	fmt.Fprintln(w)
	if len(r.rows(curvePrefix)) > 0 {
		writeCurveTargets(w, r)
		if err := writeCurveChart(*curveChart, r); err != nil {
			fmt.Fprintf(os.Stderr, "report: chart: %v\n", err)
		} else {
			fmt.Fprintf(w, "![Redis-hit reads/s against goroutines](%s)\n\n", filepath.Base(*curveChart))
		}
	}
	for _, dist := range curveDists {
		writeCurveTable(w, r, curvePrefix, dist, "reads/s", fmt.Sprintf("Single node, %s reads: reads/s", dist))
		writeCurveTable(w, r, curvePrefix, dist, "p99-us", fmt.Sprintf("Single node, %s reads: p99 (µs)", dist))
	}
	for _, dist := range curveDists {
		writeCurveTable(w, r, clusterPrefix, dist, "reads/s", fmt.Sprintf("3-master cluster, %s reads: reads/s", dist))
		writeCurveTable(w, r, clusterPrefix, dist, "p99-us", fmt.Sprintf("3-master cluster, %s reads: p99 (µs)", dist))
	}
	writeBatchTable(w, r)
}

// writeCurveTable writes one unit of one curve: a row per library, a
// column per goroutine count.
func writeCurveTable(w *bytes.Buffer, r *results, prefix, dist, unit, title string) {
	gs, libs := curveAxes(r, prefix, dist)
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(w, "#### %s\n\n| library |", title)
	for _, g := range gs {
		fmt.Fprintf(w, " %d |", g)
	}
	fmt.Fprintf(w, " configuration |\n|%s\n", strings.Repeat(" --- |", len(gs)+2))
	for _, lib := range libs {
		fmt.Fprintf(w, "| `%s` |", lib)
		for _, g := range gs {
			cell := ""
			if v, ok := r.by[curveCell(prefix, dist, g, lib)][unit]; ok {
				cell = fmtValue(unit, v)
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintf(w, " %s |\n", configLine(lib))
	}
	fmt.Fprintln(w)
}

// curveTarget is one of the figures the curves are held to: cacheguard's
// figure over another library's in the same cell (the paired ratio).
type curveTarget struct {
	g          int
	other      string
	unit       string
	bound      float64
	atLeast    bool // the ratio must be ≥ bound (else ≤)
	what       string
	otherTitle string
}

var curveTargets = []curveTarget{
	{1, "go-redis-GET+json", "reads/s", 0.95, true, "reads/s", "bare GET + json"},
	{8, "go-redis-GET+json", "reads/s", 0.95, true, "reads/s", "bare GET + json"},
	{16, "go-redis-GET+json", "reads/s", 0.95, true, "reads/s", "bare GET + json"},
	{8, "rueidis", "reads/s", 1, true, "reads/s", "rueidis"},
	{16, "rueidis", "reads/s", 1, true, "reads/s", "rueidis"},
	{64, "rueidis", "reads/s", 1, true, "reads/s", "rueidis"},
	{64, "go-redis-autopipeline", "reads/s", 0.9, true, "reads/s", "AutoPipeliner"},
	{256, "rueidis", "reads/s", 1, true, "reads/s", "rueidis"},
	{256, "go-redis-autopipeline", "reads/s", 0.9, true, "reads/s", "AutoPipeliner"},
	{256, "go-redis-GET+json", "p99-us", 1, false, "p99", "bare GET + json"},
}

// curveVerdict is cacheguard's paired ratio in one cell of a target and
// its verdict ("" when the results lack the cell).
func curveVerdict(r *results, t curveTarget, dist string) (cell, status string) {
	v, ok := r.by[curveCell(curvePrefix, dist, t.g, t.other)]["ratio-cacheguard-"+t.unit]
	if !ok {
		return "", statusNotMeasured
	}
	status = target{bound: t.bound, atLeast: t.atLeast}.decide(v)
	return fmt.Sprintf("%s (%s)", withCI(fmt.Sprintf("×%.2f", v.v), v), status), status
}

// curveTargetRows are the curve targets, one per target and distribution,
// for the summary.
func curveTargetRows(r *results) []targetRow {
	var out []targetRow
	for _, t := range curveTargets {
		for _, dist := range curveDists {
			cell, status := curveVerdict(r, t, dist)
			out = append(out, targetRow{
				what:   fmt.Sprintf("Redis hit, %s reads, %s: %s vs %s (paired)", dist, goroutines(t.g), t.what, t.otherTitle),
				figure: strings.TrimSuffix(cell, " ("+status+")"), target: target{bound: t.bound, atLeast: t.atLeast}.String(), status: status,
			})
		}
	}
	return out
}

// goroutines is "1 goroutine", "64 goroutines".
func goroutines(g int) string {
	if g == 1 {
		return "1 goroutine"
	}
	return strconv.Itoa(g) + " goroutines"
}

// writeCurveTargets states, for each target and distribution, cacheguard's
// paired ratio with its interval and whether it meets the target.
func writeCurveTargets(w *bytes.Buffer, r *results) {
	fmt.Fprintln(w, "cacheguard's `Get` against its targets (cacheguard's figure over the other's in the same cell: median over the passes ± its interval; `met` when the whole interval is on the right side, `missed` when it is wholly on the wrong side, `inconclusive` otherwise):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| goroutines | measure | against | target | uniform | zipfian |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, t := range curveTargets {
		cells := []string{}
		for _, dist := range curveDists {
			cell, _ := curveVerdict(r, t, dist)
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", t.g, t.what, t.otherTitle, target{bound: t.bound, atLeast: t.atLeast}, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

// writeBatchTable writes the batching comparison: the pool, the
// AutoPipeliner and a minimal batcher by goroutines.
func writeBatchTable(w *bytes.Buffer, r *results) {
	names := r.rows(batchPrefix)
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w, "#### Batching Redis reads: pool, AutoPipeliner, batcher")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GET + json.Unmarshal of the rows above, uniform, through go-redis's pool, its AutoPipeliner, and a batcher that sends a lone read at once and queues the reads that arrive while one is in flight, sending them as one pipeline when it returns (batch_test.go). Allocations are the whole process's heap allocations per read.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| benchmark | reads/s | p99 (µs) | allocations per read |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, n := range names {
		row := []string{"`" + label(n, batchPrefix) + "`"}
		for _, u := range []string{"reads/s", "p99-us", "allocs-per-read"} {
			cell := ""
			if v, ok := r.by[n][u]; ok {
				cell = fmtValue(u, v)
			}
			row = append(row, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
}

// The chart: one panel per distribution, reads/s against goroutines, both
// on log scales, a line per library.
const (
	chartPanelW = 470
	chartLeft   = 78
	chartGap    = 30
	chartTop    = 70
	chartH      = 300
	chartLegend = 18 // height of a legend line
)

var chartColours = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"}

// writeCurveChart writes the chart of the single-node curves to path.
func writeCurveChart(path string, r *results) error {
	var libs []string
	most, least := 0.0, math.Inf(1)
	maxG := 1
	for _, dist := range curveDists {
		gs, ls := curveAxes(r, curvePrefix, dist)
		for _, l := range ls {
			if !slices.Contains(libs, l) {
				libs = append(libs, l)
			}
			for _, g := range gs {
				maxG = max(maxG, g)
				if v, ok := r.get(curveCell(curvePrefix, dist, g, l), "reads/s"); ok && v > 0 {
					most, least = math.Max(most, v), math.Min(least, v)
				}
			}
		}
	}
	if len(libs) == 0 || most == 0 {
		return fmt.Errorf("no curve rows")
	}
	width := chartLeft + len(curveDists)*(chartPanelW+chartGap)
	legendRows := (len(libs) + 3) / 4
	height := chartTop + chartH + 50 + legendRows*chartLegend + 10
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	svgplot.Text(&b, chartLeft, 22, "start", 16, "bold", "#222", "Redis hit: reads/s against goroutines (10 000 rows in Redis, one node)")
	svgplot.Text(&b, chartLeft, 42, "start", 12, "normal", "#555", "log scales; each library runs 5 rounds of 200 ms per point, the libraries taking turns; medians over the passes of run.sh")
	yAx := svgplot.LogAxis{Top: chartTop, Bottom: chartTop + chartH,
		Lo: math.Floor(math.Log10(least)), Hi: math.Ceil(math.Log10(most))}
	for i, dist := range curveDists {
		x0 := chartLeft + i*(chartPanelW+chartGap)
		x1 := x0 + chartPanelW - 20
		// The x axis maps log10(goroutines) the way LogAxis maps a height.
		xAx := svgplot.LogAxis{Top: float64(x1 - 10), Bottom: float64(x0 + 10), Lo: 0, Hi: math.Log10(float64(maxG))}
		svgplot.Frame(&b, x0, chartTop, x1, chartTop+chartH)
		svgplot.Text(&b, x0, chartTop-8, "start", 13, "bold", "#222", dist+" reads")
		for e := yAx.Lo; e <= yAx.Hi+1e-9; e++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, e)
				if math.Log10(v) > yAx.Hi+1e-9 {
					break
				}
				svgplot.GridLine(&b, x0, x1, yAx.Y(v), fmtNum(v))
			}
		}
		if i == 0 {
			svgplot.YLabel(&b, x0, chartTop, chartTop+chartH, "reads/s")
		}
		gs, _ := curveAxes(r, curvePrefix, dist)
		for _, g := range gs {
			x := xAx.Y(float64(g))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x, chartTop+chartH, x, chartTop+chartH+4)
			svgplot.Text(&b, int(x), chartTop+chartH+16, "middle", 11, "normal", "#444", strconv.Itoa(g))
		}
		svgplot.Text(&b, (x0+x1)/2, chartTop+chartH+32, "middle", 11, "normal", "#666", "goroutines")
		for li, lib := range libs {
			var pts []string
			for _, g := range gs {
				if v, ok := r.get(curveCell(curvePrefix, dist, g, lib), "reads/s"); ok && v > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAx.Y(float64(g)), yAx.Y(v)))
				}
			}
			if len(pts) == 0 {
				continue
			}
			colour, widthPx := chartColours[li%len(chartColours)], 1.6
			if strings.HasPrefix(lib, "cacheguard") {
				widthPx = 3
			}
			fmt.Fprintf(&b, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"/>`+"\n", lib, strings.Join(pts, " "), colour, widthPx)
			for _, p := range pts {
				x, y, _ := strings.Cut(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", x, y, colour)
			}
		}
	}
	ly := chartTop + chartH + 56
	for li, lib := range libs {
		x := chartLeft + (li%4)*240
		y := ly + (li/4)*chartLegend
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", x, y, x+20, y, chartColours[li%len(chartColours)])
		svgplot.Text(&b, x+25, y+4, "start", 12, "normal", "#222", lib)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, b.Bytes(), 0o644)
}
