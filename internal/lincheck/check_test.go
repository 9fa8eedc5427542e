package lincheck

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkRegister checks every key of h against a register. It returns "" when
// the history is linearizable, else a report: the stale reads, porcupine's
// HTML visualisation (written to a temp file) and the operations of the
// smallest failing key around its worst stale read.
func checkRegister(h *history, name string, timeout time.Duration) string {
	res, info := porcupine.CheckOperationsVerbose(register, porcupineOps(h.ops), timeout)
	switch res {
	case porcupine.Ok:
		return ""
	case porcupine.Unknown:
		return fmt.Sprintf("the checker gave up after %v: no verdict", timeout)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "not linearizable against a register: %s\n", h.summary())
	if path, err := visualize(name, info); err != nil {
		fmt.Fprintf(&b, "visualisation not written: %v\n", err)
	} else {
		fmt.Fprintf(&b, "visualisation: %s\n", path)
	}

	keys := h.byKey()
	var failing []string
	var stales []stale
	for k, ops := range keys {
		if porcupine.CheckOperationsTimeout(register, porcupineOps(ops), timeout) == porcupine.Illegal {
			failing = append(failing, k)
		}
		stales = append(stales, staleReads(ops, 0)...)
	}
	sort.Slice(failing, func(i, j int) bool {
		a, c := len(keys[failing[i]]), len(keys[failing[j]])
		return a < c || a == c && failing[i] < failing[j]
	})
	fmt.Fprintf(&b, "failing keys: %v\n%s\n", failing, describeStale(stales))
	if len(failing) > 0 {
		k := failing[0]
		from, to := int64(0), int64(never)
		if s := staleReads(keys[k], 0); len(s) > 0 {
			from, to = s[0].write.call-int64(20*time.Millisecond), s[0].read.ret
		}
		fmt.Fprintf(&b, "smallest failing key %s (%d operations), those around its worst stale read:\n", k, len(keys[k]))
		listAround(&b, keys[k], from, to)
	}
	return b.String()
}

// checkBound reports the reads that started more than bound after a newer
// write returned, or "" when there are none; within is a line on the stale
// reads inside the bound.
func checkBound(h *history, bound time.Duration) (report, within string) {
	var all, stales []stale
	for _, ops := range h.byKey() {
		all = append(all, staleReads(ops, 0)...)
		stales = append(stales, staleReads(ops, bound)...)
	}
	within = staleFigures(all)
	if len(stales) == 0 {
		return "", within
	}
	var b strings.Builder
	fmt.Fprintf(&b, "reads staler than the local-tier bound %v: %s\n", bound, h.summary())
	b.WriteString(describeStale(stales))
	s := stales[0]
	fmt.Fprintf(&b, "\noperations of key %s around the worst one:\n", s.read.key)
	listAround(&b, h.byKey()[s.read.key], s.write.call-int64(20*time.Millisecond), s.read.ret)
	return b.String(), within
}

func visualize(name string, info porcupine.LinearizationInfo) (string, error) {
	f, err := os.CreateTemp("", "lincheck-"+strings.NewReplacer("/", "-", " ", "_").Replace(name)+"-*.html")
	if err != nil {
		return "", err
	}
	err = porcupine.Visualize(register, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}
