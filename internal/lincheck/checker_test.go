package lincheck

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The checks themselves, on histories written by hand.

func w(key string, ver, call, ret int64) op {
	return op{key: key, kind: "Delete", write: true, ver: ver, call: call * 1e6, ret: ret * 1e6}
}

func r(key string, ver, call, ret int64) op {
	return op{key: key, worker: 1, kind: "Get", ver: ver, call: call * 1e6, ret: ret * 1e6}
}

func TestRegisterAcceptsReadsDuringTheWrite(t *testing.T) {
	h := &history{ops: []op{w("a", 1, 0, 10), r("a", 0, 2, 4), r("a", 1, 5, 6), r("a", 1, 11, 12), r("b", 0, 0, 30)}}
	if rep := checkRegister(h, t.Name(), time.Second); rep != "" {
		t.Fatal(rep)
	}
}

func TestRegisterRejectsAReadAfterTheWrite(t *testing.T) {
	h := &history{ops: []op{w("a", 1, 0, 10), r("a", 1, 12, 13), r("a", 0, 20, 30),
		w("b", 1, 0, 10), w("b", 2, 11, 12), r("b", 1, 13, 14), r("b", 1, 15, 16), r("b", 2, 17, 18)}}
	rep := checkRegister(h, t.Name(), time.Second)
	for _, want := range []string{"failing keys: [a b]", "smallest failing key a (3 operations)",
		"STALE: started 10.0ms after a newer write returned", "max 10.0ms"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	path := visualisation(t, rep)
	if html, err := os.ReadFile(path); err != nil || !strings.Contains(string(html), "<html") {
		t.Errorf("visualisation %q: %v", path, err)
	}
}

// visualisation returns the path of the HTML file a report names, and
// removes the file when the test ends.
func visualisation(t *testing.T, report string) string {
	_, after, _ := strings.Cut(report, "visualisation: ")
	path, _, _ := strings.Cut(after, "\n")
	t.Cleanup(func() { os.Remove(path) })
	return path
}

func TestRegisterRejectsAnImpossibleValue(t *testing.T) {
	h := &history{ops: []op{w("a", 1, 0, 10), r("a", impossible, 2, 4)}}
	rep := checkRegister(h, t.Name(), time.Second)
	visualisation(t, rep)
	if !strings.Contains(rep, "impossible value") {
		t.Fatalf("report:\n%s", rep)
	}
}

func TestBoundCountsFromTheWritesReturn(t *testing.T) {
	h := &history{ops: []op{w("a", 1, 0, 10), r("a", 0, 59, 70), w("b", 1, 0, 10), r("b", 0, 61, 62)}}
	rep, within := checkBound(h, 50*time.Millisecond)
	if !strings.Contains(rep, "1 stale reads") || !strings.Contains(rep, "key b") {
		t.Errorf("report:\n%s", rep)
	}
	if !strings.Contains(within, "2 stale reads") {
		t.Errorf("within: %s", within)
	}
}
