// Package svgplot writes the few SVG elements the project's charts are made
// of (escaped text, frames, grid lines with their labels, turned axis
// labels) and maps values onto log-scaled axes, so that a chart needs no
// plotting library. The charts themselves (the storm demo's, the benchmark
// report's) lay out their panels and lines.
package svgplot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
)

// LogAxis maps values onto a chart's height on a log10 scale. Counts use
// log10(1+v), so that 0 sits on the baseline and 1 above it.
type LogAxis struct {
	Top, Bottom float64 // pixels
	Lo, Hi      float64 // log10 of the values at Bottom and Top
	Counts      bool    // the values are counts: log10(1+v)
}

// Y is the pixel height of v, clamped to the axis.
func (a LogAxis) Y(v float64) float64 {
	var l float64
	switch {
	case a.Counts:
		l = math.Log10(1 + math.Max(v, 0))
	case v <= 0:
		l = a.Lo
	default:
		l = math.Log10(v)
	}
	f := (math.Min(math.Max(l, a.Lo), a.Hi) - a.Lo) / (a.Hi - a.Lo)
	return a.Bottom - (a.Bottom-a.Top)*f
}

// Text writes an escaped text element.
func Text(b *bytes.Buffer, x, y int, anchor string, size int, weight, fill, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s" font-size="%d" font-weight="%s" fill="%s">`, x, y, anchor, size, weight, fill)
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

// Frame draws a chart's border.
func Frame(b *bytes.Buffer, x0, y0, x1, y1 int) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, x1-x0, y1-y0)
}

// GridLine draws a horizontal grid line at y with its label left of x0.
func GridLine(b *bytes.Buffer, x0, x1 int, y float64, label string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x0, y, x1, y)
	Text(b, x0-6, int(y)+4, "end", 10, "normal", "#444", label)
}

// YLabel writes a chart's y-axis label, turned, left of its tick labels.
func YLabel(b *bytes.Buffer, x0, y0, y1 int, label string) {
	yl, ym := x0-56, (y0+y1)/2
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="10" fill="#666" transform="rotate(-90 %d %d)">`, yl, ym, yl, ym)
	xml.EscapeText(b, []byte(label))
	b.WriteString("</text>\n")
}

// NiceStep rounds raw up to 1, 2 or 5 times a power of ten.
func NiceStep(raw float64) float64 {
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
