package main

// The server's ceiling: redis-benchmark's pipelined GET rate on run.sh's
// server, measured after each pass (run.sh), and each library's Gets/s of
// the CPU-per-Get rows as a fraction of it.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

const (
	// ceilingRow is the row run.sh writes from redis-benchmark's CSV.
	ceilingRow = "Ceiling/tool=redis-benchmark/pipeline=16"
	// ceilingCommand is what run.sh runs after each pass, against its
	// server (whose address it fills in), once SETs of the same 10 000
	// keys with 130-byte values have filled it.
	ceilingCommand = "redis-benchmark -P 16 -t get -n 1000000 -r 10000 --csv"
)

// writeCeiling writes the ceiling and the libraries' fractions of it.
func writeCeiling(w *bytes.Buffer, r *results) {
	fmt.Fprintln(w, "### The server's ceiling")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "What the same redis-server answers when the client costs next to nothing: redis-benchmark (50 connections, 16 GETs per pipeline, 10 000 keys of 130 bytes), run by run.sh after each pass on the server of the run: `%s`. Below it, each library's Gets/s from the CPU-per-Get rows as a share of that rate (medians over medians): the rest is the client's CPU, not the server.\n\n", ceilingCommand)
	v, ok := r.by[ceilingRow]["gets/s"]
	if !ok {
		fmt.Fprintln(w, "Not measured yet: the results hold no `Ceiling` row.")
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "redis-benchmark: %s GET/s.\n\n", fmtValue("gets/s", v))
	gs, libs := cpuAxes(r)
	if len(gs) == 0 {
		fmt.Fprintln(w, "No CPU-per-Get rows to set against it yet.")
		fmt.Fprintln(w)
		return
	}
	fmt.Fprint(w, "| library |")
	for _, g := range gs {
		n, _ := strconv.Atoi(g)
		fmt.Fprintf(w, " %s |", goroutines(n))
	}
	fmt.Fprintf(w, "\n|%s\n", strings.Repeat(" --- |", len(gs)+1))
	for _, lib := range libs {
		fmt.Fprintf(w, "| `%s` |", lib)
		for _, g := range gs {
			cell := ""
			if rate, ok := r.get(cpuPrefix+"g="+g+"/impl="+lib, "reads/s"); ok && v.v > 0 {
				cell = fmt.Sprintf("%.1f %%", 100*rate/v.v)
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

const cpuPrefix = "CPUPerGet/"

// cpuAxes are the goroutine counts and libraries of the CPU-per-Get rows,
// in benchstat's order.
func cpuAxes(r *results) (gs, libs []string) {
	for _, n := range r.rows(cpuPrefix + "g=") {
		g, _, _ := strings.Cut(strings.TrimPrefix(n, cpuPrefix+"g="), "/")
		if !contains(gs, g) {
			gs = append(gs, g)
		}
		if lib := implOf(n); !contains(libs, lib) {
			libs = append(libs, lib)
		}
	}
	return gs, libs
}
