package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The chart is a plain SVG written by hand: a few rectangles, lines and
// step paths, so the demo needs no plotting library.
const (
	plotWidth   = 960
	plotLeft    = 70 // room for the y labels
	plotRight   = 24
	panelHeight = 210 // title, chart and x labels
	panelTop    = 34  // the panel's title above its chart
	panelBottom = 34  // the x labels below it
	headerH     = 56  // the chart's title and legend
)

var modeColour = map[string]string{modeNaive: "#d62728", modeGuard: "#1f77b4"}

// writePlot draws database queries per 100 ms over time, naive against
// cacheguard, one panel per scenario.
func writePlot(w io.Writer, results []scenarioResult, cfg config) error {
	var b bytes.Buffer
	height := headerH + panelHeight*len(results) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(&b, plotLeft, 22, "start", 16, "bold", "#222",
		fmt.Sprintf("Database queries per %v: naive cache-aside vs cacheguard", bucket))
	text(&b, plotLeft, 42, "start", 12, "normal", "#555",
		fmt.Sprintf("database: %d connections, %v per query, %v queue wait; dashed line: its capacity", cfg.DBConns, cfg.DBLatency, cfg.DBWait))
	legend(&b, plotWidth-plotRight-230, 36)
	for i, r := range results {
		panel(&b, r, headerH+i*panelHeight)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func legend(b *bytes.Buffer, x, y int) {
	for i, mode := range []string{modeNaive, modeGuard} {
		lx := x + i*120
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", lx, y, lx+24, y, modeColour[mode])
		text(b, lx+30, y+4, "start", 12, "normal", "#222", mode)
	}
}

// panel draws one scenario with its top edge at y0.
func panel(b *bytes.Buffer, r scenarioResult, y0 int) {
	x0, x1 := plotLeft, plotWidth-plotRight
	cy0, cy1 := y0+panelTop, y0+panelHeight-panelBottom
	title := r.name
	series := func(run runResult) []int64 { return run.series }
	capacity := r.capacity
	yLabel := fmt.Sprintf("DB queries per %v", bucket)
	if r.plotRedis {
		yLabel = fmt.Sprintf("Redis calls per %v", bucket)
		title += fmt.Sprintf(", Redis round trips per %v", bucket)
		series = func(run runResult) []int64 { return run.redisSeries }
		capacity = 0
	}
	sep := " — "
	for _, run := range r.runs {
		if r.plotRedis {
			title += fmt.Sprintf("%s%s: %d calls, %d DB queries", sep, run.mode, run.redisCalls, run.queries)
		} else {
			title += fmt.Sprintf("%s%s: %d queries, %d refused", sep, run.mode, run.queries, run.refused)
		}
		sep = " · "
	}
	text(b, x0, y0+20, "start", 13, "bold", "#222", title)
	if r.skipped != "" || len(r.runs) == 0 {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f7f7f7" stroke="#ccc"/>`+"\n", x0, cy0, x1-x0, cy1-cy0)
		text(b, (x0+x1)/2, (cy0+cy1)/2, "middle", 12, "normal", "#777", "skipped: "+r.skipped)
		return
	}

	n := 1
	top := capacity
	for _, run := range r.runs {
		n = max(n, len(series(run)))
		for _, v := range series(run) {
			top = math.Max(top, float64(v))
		}
	}
	step := niceStep(top * 1.08 / 4)
	ymax := math.Max(step, math.Ceil(top*1.08/step)*step)
	span := time.Duration(n) * bucket
	px := func(t time.Duration) float64 { return float64(x0) + float64(x1-x0)*float64(t)/float64(span) }
	py := func(v float64) float64 { return float64(cy1) - float64(cy1-cy0)*v/ymax }

	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, cy0, x1-x0, cy1-cy0)
	for v := 0.0; v <= ymax+step/2; v += step {
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x0, y, x1, y)
		text(b, x0-6, int(y)+4, "end", 11, "normal", "#444", fmt.Sprintf("%g", v))
	}
	tstep := niceStep(span.Seconds() / 8)
	for t := 0.0; t <= span.Seconds()+1e-9; t += tstep {
		x := px(time.Duration(t * float64(time.Second)))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`+"\n", x, cy1, x, cy1+4)
		text(b, int(x), cy1+17, "middle", 11, "normal", "#444", fmt.Sprintf("%gs", round3(t)))
	}
	for _, m := range r.marks {
		if m.at <= 0 || m.at >= span {
			continue
		}
		x := px(m.at)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="2,3"/>`+"\n", x, cy0, x, cy1)
		text(b, int(x)+4, cy0+12, "start", 10, "normal", "#666", m.label)
	}
	if capacity > 0 {
		y := py(capacity)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444" stroke-dasharray="6,4"/>`+"\n", x0, y, x1, y)
	}
	for _, run := range r.runs {
		var p strings.Builder
		for i, v := range series(run) {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			y := py(float64(v))
			fmt.Fprintf(&p, "%s%.1f,%.1f L%.1f,%.1f ", cmd, px(time.Duration(i)*bucket), y, px(time.Duration(i+1)*bucket), y)
		}
		if p.Len() > 0 {
			fmt.Fprintf(b, `<path class="%s" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`+"\n",
				run.mode, strings.TrimSpace(p.String()), modeColour[run.mode])
		}
	}
	// Each line's peak is labelled, so that a line hugging zero (a handful
	// of queries against thousands) still reads as a number.
	for i, run := range r.runs {
		at, top := 0, int64(-1)
		for j, v := range series(run) {
			if v > top {
				at, top = j, v
			}
		}
		if top < 0 {
			continue
		}
		x := px(time.Duration(at)*bucket + bucket/2)
		y := py(float64(top)) - 5 - float64(12*i)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" font-weight="bold" fill="%s">peak %d</text>`+"\n",
			x, math.Max(y, float64(cy0+10)), modeColour[run.mode], top)
	}
	yl, ym := x0-52, (cy0+cy1)/2
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="10" fill="#666" transform="rotate(-90 %d %d)">`, yl, ym, yl, ym)
	xml.EscapeText(b, []byte(yLabel))
	b.WriteString("</text>\n")
	text(b, x1, cy1+30, "end", 10, "normal", "#666", "time since the run started")
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// text writes an escaped SVG text element.
func text(b *bytes.Buffer, x, y int, anchor string, size int, weight, fill, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d" font-weight="%s" fill="%s">`, x, y, anchor, size, weight, fill)
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}
