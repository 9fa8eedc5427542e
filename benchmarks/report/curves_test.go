package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// curveCSV is benchstat's CSV for two cells of the uniform curve: their
// own time, reads/s of cacheguard and rueidis, and cacheguard's paired
// ratio to rueidis.
const curveCSV = `goos: linux

,results/raw.txt
,sec/op,CI
Curve/dist=uniform/g=1-2,2.1,±1%
Curve/dist=uniform/g=64-2,2.2,±1%

,results/raw.txt
,reads/s@cacheguard,CI
Curve/dist=uniform/g=1-2,50000,±2%
Curve/dist=uniform/g=64-2,60000,±4%

,results/raw.txt
,reads/s@rueidis,CI
Curve/dist=uniform/g=1-2,45000,±3%
Curve/dist=uniform/g=64-2,120000,±5%

,results/raw.txt
,ratio-cacheguard-reads/s@rueidis,CI
Curve/dist=uniform/g=64-2,0.5,±10%
`

// The curve rows become a table by goroutines, a target row and a chart
// with a line per library.
func TestCurves(t *testing.T) {
	r, err := parseCSV([]byte(curveCSV))
	if err != nil {
		t.Fatal(err)
	}
	old := *curveChart
	*curveChart = filepath.Join(t.TempDir(), "curves.svg")
	t.Cleanup(func() { *curveChart = old })
	var out bytes.Buffer
	writeCurves(&out, r)
	for _, want := range []string{
		"| library | 1 | 64 | configuration |",
		"| `cacheguard` | 50000 ±2% | 60000 ±4% | " + configLine("cacheguard") + " |",
		"| `rueidis` | 45000 ±3% | 120000 ±5% | " + configLine("rueidis") + " |",
		"| 64 | reads/s | rueidis | ≥ ×1.00 | ×0.50 ±10% (missed) |  |",
		"![Redis-hit reads/s against goroutines](curves.svg)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	svg, err := os.ReadFile(*curveChart)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Lines []struct {
			Class string `xml:"class,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	if len(doc.Lines) != 2 || doc.Lines[0].Class != "cacheguard" || doc.Lines[1].Class != "rueidis" {
		t.Fatalf("chart lines %+v, want cacheguard and rueidis", doc.Lines)
	}
}
