package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// printScenario writes one scenario's table: naive and cacheguard side by
// side, then what went wrong and what cacheguard did.
func printScenario(w io.Writer, r scenarioResult) {
	fmt.Fprintf(w, "%s: %s\n", r.name, r.about)
	defer fmt.Fprintln(w)
	if r.skipped != "" {
		fmt.Fprintf(w, "  skipped: %s\n", r.skipped)
		return
	}
	fmt.Fprintf(w, "  %-13s %9s %10s %12s %9s %12s %9s %9s %8s\n",
		"", "requests", "DB queries", "peak DB q/s", "refused", "Redis calls", "p50", "p99", "errors")
	for _, run := range r.runs {
		fmt.Fprintf(w, "  %-13s %9d %10d %12d %9d %12d %9s %9s %8d\n",
			run.mode, run.requests, run.queries, run.peak, run.refused, run.redisCalls,
			fmtDur(run.p50), fmtDur(run.p99), run.failed)
	}
	for _, run := range r.runs {
		if len(run.errs) > 0 {
			fmt.Fprintf(w, "  %s errors: %s\n", run.mode, joinErrs(run.errs))
		}
	}
	for _, run := range r.runs {
		if run.stats != nil {
			fmt.Fprintf(w, "  %s: %s\n", run.mode, describeStats(run))
			for _, msg := range run.samples {
				fmt.Fprintf(w, "    e.g. %s\n", msg)
			}
		}
	}
}

func joinErrs(errs []errCount) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, fmt.Sprintf("%d %s", e.n, e.kind))
	}
	return strings.Join(parts, ", ")
}

// describeStats lists cacheguard's counters that say what it did.
func describeStats(run runResult) string {
	st := run.stats
	var parts []string
	add := func(n uint64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(st.Loads, "loads")
	add(st.FilterRejects, "answered by the Bloom filter")
	add(st.LocalHits, "served from the local tier")
	add(st.Hits-st.LocalHits, "Redis hits")
	add(st.NullHits, "cached absences")
	add(st.LeaseWaits, "fills waited for another's lease")
	add(st.WaitTimeouts, "waits timed out")
	add(st.RedisErrors, "Redis errors")
	add(st.StaleServed, "stale local entries served")
	add(uint64(run.background), "background errors")
	if len(parts) == 0 {
		return "nothing happened"
	}
	return strings.Join(parts, ", ")
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
