package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/svgplot"
)

// The chart is a plain SVG written by hand: a few rectangles, lines and
// step paths, so the demo needs no plotting library.
//
// Each scenario gets a panel: what the storm does to the database (or, for
// the zipfian load, to Redis) on a log scale, so that three queries read as
// clearly as three thousand, with the queries the database refused shaded;
// under it two strips with the requests that failed and the p99 latency of
// the requests due in each 100 ms, where a Redis restart shows as errors
// or waits rather than as queries.
const (
	plotWidth = 960
	plotLeft  = 78 // room for the y labels
	plotRight = 24
	headerH   = 110 // the chart's title, notes, machine and legend
	titleH    = 44  // a panel's title and totals above its chart
	mainH     = 130
	stripH    = 46
	gapH      = 10
	xLabelsH  = 36
	panelH    = titleH + mainH + 2*(gapH+stripH) + xLabelsH
)

var modeColour = map[string]string{modeNaive: "#d62728", modeGuard: "#1f77b4", modeNoLocal: "#2ca02c"}

// modeClass names a mode in the SVG's class attributes.
func modeClass(mode string) string { return strings.ReplaceAll(mode, " ", "-") }

// writePlot draws every scenario's panel, naive against cacheguard with and
// without its local tier, under a header that names the machine and its load.
func writePlot(w io.Writer, results []scenarioResult, cfg config, m *machine) error {
	var b bytes.Buffer
	height := headerH + panelH*len(results) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	svgplot.Text(&b, plotLeft, 22, "start", 16, "bold", "#222", "The storms: naive cache-aside against cacheguard, with and without its local tier")
	svgplot.Text(&b, plotLeft, 42, "start", 12, "normal", "#555",
		fmt.Sprintf("database: %d connections, %v per query, refused after %v without a connection; dashed line: its capacity",
			cfg.DBConns, cfg.DBLatency, cfg.DBWait))
	svgplot.Text(&b, plotLeft, 60, "start", 12, "normal", "#555",
		fmt.Sprintf("log scales; shaded: queries the database refused; strips: failed requests and p99 latency of the requests due in each %v", bucket))
	svgplot.Text(&b, plotLeft, 78, "start", 12, "normal", "#555", "machine: "+m.String())
	legend(&b, plotLeft, 98)
	for i, r := range results {
		panel(&b, r, headerH+i*panelH)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func legend(b *bytes.Buffer, x, y int) {
	for i, mode := range modes {
		lx := x + i*130
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", lx, y, lx+20, y, modeColour[mode])
		svgplot.Text(b, lx+25, y+4, "start", 12, "normal", "#222", mode)
	}
}

// countAxis fits counts up to top, with a decade of room at least.
func countAxis(top, bottom int, most float64) (svgplot.LogAxis, []float64) {
	hi := math.Max(1, math.Ceil(math.Log10(1+most)+0.05))
	ticks := []float64{0}
	for v := 1.0; math.Log10(v) <= hi+1e-9; v *= 10 {
		ticks = append(ticks, v)
	}
	return svgplot.LogAxis{Top: float64(top), Bottom: float64(bottom), Hi: hi, Counts: true}, ticks
}

// panel draws one scenario with its top edge at y0.
func panel(b *bytes.Buffer, r scenarioResult, y0 int) {
	x0, x1 := plotLeft, plotWidth-plotRight
	what := fmt.Sprintf("database queries per %v", bucket)
	series := func(run runResult) []int64 { return run.series }
	capacity := r.capacity
	if r.plotRedis {
		what = fmt.Sprintf("Redis round trips per %v (the database is idle: every key is cached)", bucket)
		series = func(run runResult) []int64 { return run.redisSeries }
		capacity = 0
	}
	svgplot.Text(b, x0, y0+18, "start", 14, "bold", "#222", r.name+": "+what)
	var totals []string
	for _, run := range r.runs {
		if r.plotRedis {
			totals = append(totals, fmt.Sprintf("%s %d calls", run.mode, run.redisCalls))
		} else {
			totals = append(totals, fmt.Sprintf("%s %d queries (%d refused), %d failed", run.mode, run.queries, run.refused, run.failed))
		}
	}
	if r.name == "penetration" {
		totals = append(totals, "no local tier: not run, the Bloom filter answers first")
	}
	svgplot.Text(b, x0, y0+35, "start", 11, "normal", "#444", strings.Join(totals, " · "))
	cy0, cy1 := y0+titleH, y0+titleH+mainH
	if r.skipped != "" || len(r.runs) == 0 {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f7f7f7" stroke="#ccc"/>`+"\n", x0, cy0, x1-x0, cy1-cy0)
		svgplot.Text(b, (x0+x1)/2, (cy0+cy1)/2, "middle", 12, "normal", "#777", "skipped: "+r.skipped)
		return
	}

	n := 1
	most := capacity
	for _, run := range r.runs {
		n = max(n, len(series(run)))
		for _, v := range series(run) {
			most = math.Max(most, float64(v))
		}
	}
	span := time.Duration(n) * bucket
	px := func(t time.Duration) float64 { return float64(x0) + float64(x1-x0)*float64(t)/float64(span) }

	// The main chart.
	ax, ticks := countAxis(cy0, cy1, most)
	svgplot.Frame(b, x0, cy0, x1, cy1)
	for _, v := range ticks {
		svgplot.GridLine(b, x0, x1, ax.Y(v), fmt.Sprintf("%g", v))
	}
	svgplot.YLabel(b, x0, cy0, cy1, "per "+bucket.String())
	drawMarks(b, r.marks, span, px, cy0, cy1, true)
	if capacity > 0 {
		y := ax.Y(capacity)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444" stroke-dasharray="6,4"/>`+"\n", x0, y, x1, y)
		svgplot.Text(b, x1-4, int(y)-4, "end", 10, "normal", "#444", fmt.Sprintf("capacity %g", capacity))
	}
	if !r.plotRedis {
		for _, run := range r.runs {
			area(b, clip(run.refusedSer, n), px, ax, modeColour[run.mode], "refused-"+modeClass(run.mode))
		}
	}
	for _, run := range r.runs {
		step(b, series(run), px, ax, modeColour[run.mode], modeClass(run.mode))
	}

	// Failed requests.
	sy0 := cy1 + gapH
	sy1 := sy0 + stripH
	mostFailed := 0.0
	for _, run := range r.runs {
		for _, v := range run.failedSer {
			mostFailed = math.Max(mostFailed, float64(v))
		}
	}
	fax, fticks := countAxis(sy0, sy1, mostFailed)
	svgplot.Frame(b, x0, sy0, x1, sy1)
	for _, v := range fticks {
		if v == 0 || v == fticks[len(fticks)-1] || len(fticks) <= 3 {
			svgplot.GridLine(b, x0, x1, fax.Y(v), fmt.Sprintf("%g", v))
		}
	}
	svgplot.YLabel(b, x0, sy0, sy1, "failed")
	drawMarks(b, r.marks, span, px, sy0, sy1, false)
	for _, run := range r.runs {
		step(b, clip(run.failedSer, n), px, fax, modeColour[run.mode], "failed-"+modeClass(run.mode))
	}

	// p99 latency, from 100µs to 10s.
	ly0 := sy1 + gapH
	ly1 := ly0 + stripH
	lax := svgplot.LogAxis{Top: float64(ly0), Bottom: float64(ly1), Lo: -4, Hi: 1}
	svgplot.Frame(b, x0, ly0, x1, ly1)
	for _, t := range []struct {
		d     time.Duration
		label string
	}{{time.Millisecond, "1ms"}, {100 * time.Millisecond, "100ms"}, {10 * time.Second, "10s"}} {
		svgplot.GridLine(b, x0, x1, lax.Y(t.d.Seconds()), t.label)
	}
	svgplot.YLabel(b, x0, ly0, ly1, "p99")
	drawMarks(b, r.marks, span, px, ly0, ly1, false)
	for _, run := range r.runs {
		p99 := clip(run.p99Series, n)
		vals := make([]float64, len(p99))
		for i, d := range p99 {
			vals[i] = d.Seconds()
		}
		stepF(b, vals, px, lax, modeColour[run.mode], "p99-"+modeClass(run.mode))
	}

	tstep := svgplot.NiceStep(span.Seconds() / 8)
	for t := 0.0; t <= span.Seconds()+1e-9; t += tstep {
		x := px(time.Duration(t * float64(time.Second)))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x, ly1, x, ly1+4)
		svgplot.Text(b, int(x), ly1+16, "middle", 11, "normal", "#444", fmt.Sprintf("%gs", round3(t)))
	}
	svgplot.Text(b, x1, ly1+29, "end", 10, "normal", "#666", "time since the run started (requests by when they were due)")
}

// clip cuts a strip's series to the main chart's time span.
func clip[T any](s []T, n int) []T { return s[:min(len(s), n)] }

// drawMarks draws the scenario's events: a dotted line, or a band, labelled
// in the main chart only.
func drawMarks(b *bytes.Buffer, marks []mark, span time.Duration, px func(time.Duration) float64, y0, y1 int, labels bool) {
	for i, m := range marks {
		if m.at <= 0 || m.at >= span {
			continue
		}
		x := px(m.at)
		if m.to > m.at {
			w := px(min(m.to, span)) - x
			fmt.Fprintf(b, `<rect class="mark" x="%.1f" y="%d" width="%.1f" height="%d" fill="#1f77b4" fill-opacity="0.07"/>`+"\n", x, y0, w, y1-y0)
		} else {
			fmt.Fprintf(b, `<line class="mark" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#666" stroke-dasharray="2,3"/>`+"\n", x, y0, x, y1)
		}
		if labels {
			svgplot.Text(b, int(x)+4, y0+12+12*(i%2), "start", 10, "normal", "#555", m.label)
		}
	}
}

// step draws counts as a step line.
func step(b *bytes.Buffer, counts []int64, px func(time.Duration) float64, ax svgplot.LogAxis, colour, class string) {
	vals := make([]float64, len(counts))
	for i, v := range counts {
		vals[i] = float64(v)
	}
	stepF(b, vals, px, ax, colour, class)
}

func stepF(b *bytes.Buffer, vals []float64, px func(time.Duration) float64, ax svgplot.LogAxis, colour, class string) {
	var p strings.Builder
	for i, v := range vals {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		y := ax.Y(v)
		fmt.Fprintf(&p, "%s%.1f,%.1f L%.1f,%.1f ", cmd, px(time.Duration(i)*bucket), y, px(time.Duration(i+1)*bucket), y)
	}
	if p.Len() > 0 {
		fmt.Fprintf(b, `<path class="%s" d="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round" stroke-opacity="0.9"/>`+"\n",
			class, strings.TrimSpace(p.String()), colour)
	}
}

// area shades the buckets' counts down to the baseline.
func area(b *bytes.Buffer, counts []int64, px func(time.Duration) float64, ax svgplot.LogAxis, colour, class string) {
	for i, v := range counts {
		if v <= 0 {
			continue
		}
		xa, xb := px(time.Duration(i)*bucket), px(time.Duration(i+1)*bucket)
		y := ax.Y(float64(v))
		fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.22"/>`+"\n",
			class, xa, y, xb-xa, ax.Bottom-y, colour)
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
