// Command report turns benchstat's CSV summary of the benchmark suite into
// benchmarks/RESULTS.md: the machine and the command, a headline table of
// ratios, one table per workload, and the commands that reproduce the
// measurements run.sh does not make. It writes the whole file; nothing in it
// is edited by hand (the method is in benchmarks/README.md).
//
//	go run ./report -csv results/benchstat.csv -machine results/machine.txt \
//	    -command "go test ..." -out RESULTS.md
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	csvPath := flag.String("csv", "results/benchstat.csv", "benchstat -format csv output")
	machinePath := flag.String("machine", "results/machine.txt", "machine description, one fact per line")
	command := flag.String("command", "", "the command that produced the results")
	outPath := flag.String("out", "RESULTS.md", "file to write")
	flag.Parse()

	data, err := os.ReadFile(*csvPath)
	if err != nil {
		log.Fatal(err)
	}
	res, err := parseCSV(data)
	if err != nil {
		log.Fatal(err)
	}
	machine, err := os.ReadFile(*machinePath)
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	writeFile(&out, res, strings.TrimSpace(string(machine)), *command)
	if err := os.WriteFile(*outPath, out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

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
	return r, sc.Err()
}

// tableLibraries is the order of the libraries in the tables (as in the
// benchmarks' libraries()); others follow in name order.
var tableLibraries = []string{"go-redis-GET+json", "go-redis-autopipeline", "cacheguard", "cacheguard+msgpack", "go-zero", "rockscache", "gocache", "go-redis-cache", "go-redis-cache+json", "jetcache", "jetcache+json", "rueidis", "sturdyc", "go-redis"}

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

// column describes one column of a workload table.
type column struct {
	unit, title string
}

// table describes one workload table.
type table struct {
	title, about string
	prefix       string
	columns      []column
	// ratioTo, if set, adds a column: this row's sec/op over that row's.
	ratioTo, ratioTitle string
	// inverse makes the ratio column that row's sec/op over this row's
	// (a throughput ratio).
	inverse bool
	notes   map[string]string
}

var noteNoNull = "no absence caching: every read of an absent row queries the database"

var tables = []table{
	{
		title:   "Redis-hit path",
		about:   "One Get of a row that is in Redis (no local tier): one round trip and decoding. Serial unless marked parallel; the libraries run one after another, so read time from the next table (libraries taking turns) and allocations from this one.",
		prefix:  "RedisHit/",
		columns: []column{{"sec/op", "time/op"}, {"redis-roundtrips/op", "round trips/op"}, {"B/op", "B/op"}, {"allocs/op", "allocs/op"}},
		ratioTo: "RedisHit/impl=go-redis-GET+json", ratioTitle: "vs GET+json",
		notes: map[string]string{
			"rockscache":          "sends its Lua script in full (EVAL) on every read",
			"cacheguard+msgpack":  "MessagePack (codec/msgpack)",
			"go-redis-cache":      "MessagePack (default)",
			"go-redis-cache+json": "JSON",
			"jetcache":            "MessagePack (default)",
			"jetcache+json":       "JSON",
		},
	},
	{
		title:   "Redis hit, serial, libraries taking turns",
		about:   "The serial Redis hit of every library in one loop, each making 16 Gets in its turn, so that all see the same machine; the median time per Get over the turns. Libraries that offer both run on JSON and on MessagePack (`+json`, `+msgpack`: the codec that is not their default).",
		prefix:  "RedisHitSerial/",
		columns: []column{{"sec/op", "time per Get"}},
		ratioTo: "RedisHitSerial/impl=go-redis-GET+json", ratioTitle: "vs GET+json",
		notes: map[string]string{
			"cacheguard":          "JSON (default)",
			"cacheguard+msgpack":  "MessagePack (codec/msgpack)",
			"go-zero":             "JSON",
			"rockscache":          "JSON; sends its Lua script in full (EVAL) on every read",
			"gocache":             "JSON",
			"go-redis-cache":      "MessagePack (default)",
			"go-redis-cache+json": "JSON",
			"jetcache":            "MessagePack (default)",
			"jetcache+json":       "JSON",
		},
	},
	{
		title:   "Hit paths, paired",
		about:   "cacheguard and its baseline run in alternating blocks in one loop, so both see the same machine; `ratio` is the median over iterations of cacheguard's block time over the baseline's in the same iteration (the two blocks swap order every iteration). Targets: at most 1.05 on the Redis hit, 1.3 on the local hit.",
		prefix:  "Paired/",
		columns: []column{{"raw-sec/op", "GET+json"}, {"ristretto-sec/op", "ristretto Get"}, {"cacheguard-sec/op", "cacheguard"}, {"ratio", "ratio"}},
	},
	{
		title:   "Lock, uncontended, paired",
		about:   "One uncontended TryLock and Unlock of a cacheguard Mutex (`base`) and one of another library (`vs`), taking turns in one loop (each goes first half the time); the median time of each and `ratio`, the median over iterations of cacheguard's time over the other's in the same iteration. `cacheguard` draws a fencing token; `cacheguard-unfenced` (WithoutFencing) does not, like the others; `-ctxtimeout`: both on go-redis clients made with ContextTimeoutEnabled. Target: at most 1.10 for the fenced Mutex against redislock.",
		prefix:  "LockUncontendedPaired/",
		columns: []column{{"base-sec/op", "cacheguard"}, {"other-sec/op", "other"}, {"ratio", "ratio"}},
	},
	{
		title:   "Local-hit path",
		about:   "One Get of a row held in process memory. cacheguard keeps decoded values; the other libraries keep encoded bytes and decode on every hit.",
		prefix:  "LocalHit/",
		columns: []column{{"sec/op", "time/op"}, {"local-hits/op", "local hits/op"}, {"redis-roundtrips/op", "round trips/op"}, {"B/op", "B/op"}, {"allocs/op", "allocs/op"}},
		ratioTo: "LocalHit/impl=ristretto", ratioTitle: "vs ristretto",
		notes: map[string]string{
			"cacheguard+hotkeys":   "detector records every Get",
			"cacheguard+ristretto": "ristretto store (WithLocalRistretto)",
			"gocache":              "chain: GET of the ristretto layer, then JSON decoding",
		},
	},
	{
		title:   "Local store hit ratio (zipfian trace)",
		about:   "Share of hits replaying the zipfian trace (s = 1.1, 100 000 rows) into a store of the given size; oracle holds exactly the most frequent rows.",
		prefix:  "LocalHitRatio/",
		columns: []column{{"hit-%", "hit %"}},
	},
	{
		title:   "Zipfian reads over 100 000 rows",
		about:   "8 goroutines read along a zipfian trace (s = 1.1); every row is in Redis. `throughput` is relative to cacheguard without a local tier.",
		prefix:  "Zipfian/",
		columns: []column{{"sec/op", "time/op"}, {"redis-roundtrips/op", "round trips/op"}, {"db-loads/op", "DB loads/op"}},
		ratioTo: "Zipfian/impl=cacheguard", ratioTitle: "throughput", inverse: true,
		notes: map[string]string{
			"cacheguard+hotkeys":      "local tier admits promoted hot keys only (k = 1000, 10 reads/s)",
			"cacheguard+hotkeys-wide": "local tier admits promoted hot keys only (k = 10 000, 2 reads/s)",
			"cacheguard+local-all":    "local tier admits every key (WithLocalAdmitAll)",
			"go-zero":                 "no local tier; concurrent reads of one key share a GET",
			"rockscache":              "no local tier; concurrent reads of one key share a call",
			"go-redis-cache":          "concurrent reads of one key share a GET; MessagePack",
			"jetcache":                "concurrent reads of one key share a GET; MessagePack",
			"cacheguard+msgpack":      "no local tier; MessagePack (codec/msgpack)",
			"go-redis-cache+json":     "concurrent reads of one key share a GET; JSON",
			"jetcache+json":           "concurrent reads of one key share a GET; JSON",
			"gocache+local":           "chain reads GET + TTL on a local miss",
		},
	},
	{
		title:   "Stampede on one expiring key",
		about:   "200 goroutines per process read one key absent from Redis at the same instant; the database answers in 20 ms. An op is one stampede; `DB loads/op` = 1 is ideal.",
		prefix:  "Stampede/",
		columns: []column{{"sec/op", "time/op"}, {"db-loads/op", "DB loads/op"}, {"slowest-read-ms", "slowest read (ms)"}, {"redis-roundtrips/op", "round trips/op"}, {"failed-reads/op", "failed reads/op"}},
		notes: map[string]string{
			"go-zero":        "singleflight in the process only: one load per process",
			"gocache":        "singleflight in the process only; fills Redis asynchronously",
			"go-redis-cache": "singleflight in the process only",
			"jetcache":       "singleflight in the process only",
			"go-redis":       "no deduplication at all",
			"rockscache":     "lock in Redis; waiters poll every 100 ms",
			"cacheguard":     "singleflight and one shared Redis read per process + lease in Redis; waiters woken by a fill notification (polling as the fallback)",
		},
	},
	{
		title:   "Penetration: reads of absent rows",
		about:   "8 goroutines read rows that do not exist; the database answers in 1 ms. `absent=repeat`: 1 000 absent ids, each read once before timing; `absent=unique`: never the same id twice.",
		prefix:  "Penetration/",
		columns: []column{{"sec/op", "time/op"}, {"db-loads/op", "DB loads/op"}, {"redis-roundtrips/op", "round trips/op"}},
		notes: map[string]string{
			"gocache":          noteNoNull,
			"go-redis-cache":   noteNoNull,
			"go-redis":         noteNoNull,
			"cacheguard+bloom": "local Bloom filter of the 100 000 rows, 1 % false positives",
		},
	},
	{
		title:   "Mass expiry (avalanche)",
		about:   "500 rows filled at once with a 2 s TTL, then read at 5 000 reads/s (open loop) until 3.4 s after the fill; the database answers in 4 ms through 8 connections (2 000 queries/s). An op is one cycle.",
		prefix:  "MassExpiry/",
		columns: []column{{"db-loads/op", "DB loads/op"}, {"db-peak-qps", "peak DB queries/s"}, {"db-peak-queue", "peak DB queue"}, {"p99-read-ms", "p99 read (ms)"}},
		notes: map[string]string{
			"cacheguard":     "TTL jitter ±10 % (default)",
			"go-zero":        "TTL ±5 %, rounded up to whole seconds (2 s or 3 s here)",
			"rockscache":     "subtracts up to 10 %, truncated to whole seconds (all 2 s here)",
			"gocache":        "no jitter",
			"go-redis-cache": "no jitter",
			"jetcache":       "no jitter on values",
			"go-redis":       "no jitter, no deduplication",
		},
	},
	{
		title:   "Invalidation race (stale reads)",
		about:   "8 readers and 1 writer on 16 rows for 1 s; the database answers in 3 ms and the writer updates a row and invalidates it every 2 ms. A stale read started after an invalidation returned and still got the older row.",
		prefix:  "InvalidationRace/",
		columns: []column{{"stale-reads/op", "stale reads"}, {"reads/op", "reads"}, {"stale-keys-left/op", "stale rows left"}},
		notes: map[string]string{
			"rockscache": "weak consistency by default: serves the invalidated value while it refreshes",
			"cacheguard": "fills are lease-guarded; stale reads come from callers joining a load already in flight",
		},
	},
}

// generatedNote heads RESULTS.md.
const generatedNote = "<!-- Generated by benchmarks/run.sh (go run ./report); do not edit by hand. -->"

// writeFile writes the whole of RESULTS.md.
func writeFile(w *bytes.Buffer, r *results, machine, command string) {
	fmt.Fprintln(w, "# Benchmark results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, generatedNote)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "How these are measured and how the verdicts are decided: [README.md](README.md).")
	fmt.Fprintln(w)
	writeResults(w, r, machine, command)
	writeOtherCommands(w)
}

func writeResults(w *bytes.Buffer, r *results, machine, command string) {
	fmt.Fprintln(w, "## Results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated by `benchmarks/run.sh` from benchstat's summary (medians; ± is the 90 % confidence interval).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Machine:")
	fmt.Fprintln(w)
	for _, l := range strings.Split(machine, "\n") {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Command (in `benchmarks/`):")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "```sh\n%s\n```\n\n", command)
	writeHeadline(w, r)
	for _, t := range tables {
		writeTable(w, r, t)
	}
	writeCurves(w, r)
}

// formatting

func fmtTime(sec float64) string {
	switch ns := sec * 1e9; {
	case ns < 1e3:
		return fmt.Sprintf("%.1f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.2f s", ns/1e9)
	}
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

func fmtValue(unit string, v value) string {
	var s string
	if strings.HasSuffix(unit, "sec/op") {
		s = fmtTime(v.v)
	} else {
		s = fmtNum(v.v)
	}
	if ci := strings.TrimPrefix(v.ci, "±"); ci != "" && ci != "∞" && ci != "?" && ci != "0%" {
		s += " ±" + strings.TrimPrefix(v.ci, "±")
	}
	return s
}

// label is the part of a row name after the table's prefix.
func label(name, prefix string) string { return strings.TrimPrefix(name, prefix) }

// implOf extracts the value of impl= from a row name.
func implOf(name string) string {
	for _, part := range strings.Split(name, "/") {
		if v, ok := strings.CutPrefix(part, "impl="); ok {
			return v
		}
	}
	return ""
}

func writeTable(w *bytes.Buffer, r *results, t table) {
	names := r.rows(t.prefix)
	if len(names) == 0 {
		return
	}
	var cols []column
	for _, c := range t.columns {
		for _, n := range names {
			if _, ok := r.by[n][c.unit]; ok {
				cols = append(cols, c)
				break
			}
		}
	}
	fmt.Fprintf(w, "### %s\n\n%s\n\n", t.title, t.about)
	head := []string{"benchmark"}
	for i, c := range cols {
		head = append(head, c.title)
		if i == 0 && t.ratioTo != "" {
			head = append(head, t.ratioTitle)
		}
	}
	if t.notes != nil {
		head = append(head, "note")
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, n := range names {
		row := []string{"`" + label(n, t.prefix) + "`"}
		// A parallel run is compared with the baseline's parallel run.
		base, hasBase := r.get(t.ratioTo, "sec/op")
		if strings.HasSuffix(n, "/parallel") {
			base, hasBase = r.get(t.ratioTo+"/parallel", "sec/op")
		}
		for i, c := range cols {
			if v, ok := r.by[n][c.unit]; ok {
				row = append(row, fmtValue(c.unit, v))
			} else {
				row = append(row, "")
			}
			if i == 0 && t.ratioTo != "" {
				v, ok := r.get(n, "sec/op")
				switch {
				case !ok || !hasBase || v == 0 || base == 0:
					row = append(row, "")
				case t.inverse:
					row = append(row, fmt.Sprintf("×%.2f", base/v))
				default:
					row = append(row, fmt.Sprintf("×%.2f", v/base))
				}
			}
		}
		if t.notes != nil {
			row = append(row, t.notes[implOf(n)])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
}

// The headline compares cacheguard with the best of the other libraries on
// the measure each workload is about.

type headline struct {
	workload, measure string
	unit              string
	prefix            string // rows compared: prefix + "impl=" + library
	cacheguard        string // cacheguard's impl name
	exclude           []string
	higherBetter      bool
	// sharedFloor: every library pays the same physical floor on this
	// measure (one round trip per Redis hit), so medians within
	// floorTolerance of each other are on par even when their intervals
	// separate: what is left to compare is noise around the round trip.
	sharedFloor bool
	// format renders a value of unit.
	format func(float64) string
}

var headlines = []headline{
	{workload: "Redis hit, serial, JSON", measure: "time per Get", unit: "sec/op", prefix: "RedisHitSerial/", cacheguard: "cacheguard", exclude: []string{"go-redis-GET+json", "go-redis-cache", "jetcache"}, sharedFloor: true, format: fmtTime},
	{workload: "Redis hit, serial, MessagePack", measure: "time per Get", unit: "sec/op", prefix: "RedisHitSerial/", cacheguard: "cacheguard+msgpack", exclude: []string{"go-redis-GET+json", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "sturdyc"}, sharedFloor: true, format: fmtTime},
	{workload: "Local hit, serial", measure: "time per Get", unit: "sec/op", prefix: "LocalHit/", cacheguard: "cacheguard", exclude: []string{"ristretto", "otter"}, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier for hot keys (k = 10 000, as many rows as the others hold)", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+hotkeys-wide", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, local tier admitting every key", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtTime},
	{workload: "Zipfian, local tier admitting every key", measure: "Redis round trips per read", unit: "redis-roundtrips/op", prefix: "Zipfian/", cacheguard: "cacheguard+local-all", exclude: zipfRedisOnly, format: fmtNum},
	{workload: "Zipfian, Redis only, JSON", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "sturdyc+local", "go-redis-cache", "jetcache"}, format: fmtTime},
	{workload: "Zipfian, Redis only, MessagePack", measure: "time per read (8 goroutines)", unit: "sec/op", prefix: "Zipfian/", cacheguard: "cacheguard+msgpack", exclude: []string{"gocache+local", "go-redis-cache+local", "jetcache+local", "rueidis+local", "sturdyc+local", "go-zero", "rockscache", "gocache", "go-redis-cache+json", "jetcache+json", "rueidis", "sturdyc"}, format: fmtTime},
	{workload: "Stampede, 3 processes × 200", measure: "DB loads per stampede", unit: "db-loads/op", prefix: "Stampede/procs=3/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Stampede, 3 processes × 200", measure: "slowest reader (ms)", unit: "slowest-read-ms", prefix: "Stampede/procs=3/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Stampede, 1 process × 200", measure: "slowest reader (ms)", unit: "slowest-read-ms", prefix: "Stampede/procs=1/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Penetration, repeated absent ids", measure: "DB loads per read", unit: "db-loads/op", prefix: "Penetration/absent=repeat/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Penetration, unique absent ids", measure: "DB loads per read", unit: "db-loads/op", prefix: "Penetration/absent=unique/", cacheguard: "cacheguard+bloom", format: fmtNum},
	{workload: "Mass expiry", measure: "peak DB queries/s", unit: "db-peak-qps", prefix: "MassExpiry/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Mass expiry", measure: "p99 read latency (ms)", unit: "p99-read-ms", prefix: "MassExpiry/", cacheguard: "cacheguard", format: fmtNum},
	{workload: "Invalidation race", measure: "stale reads in a 1 s run", unit: "stale-reads/op", prefix: "InvalidationRace/", cacheguard: "cacheguard", format: fmtNum},
}

// zipfRedisOnly are the zipfian rows without a local tier, which the rows
// about local tiers leave out.
var zipfRedisOnly = []string{"go-zero", "rockscache", "gocache", "go-redis-cache", "go-redis-cache+json", "jetcache", "jetcache+json", "rueidis", "sturdyc"}

func writeHeadline(w *bytes.Buffer, r *results) {
	fmt.Fprintln(w, "### Headline")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against its own targets:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | cacheguard / baseline | target |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	if v, ok := r.get("Paired/path=redis-hit/cacheguard-vs-go-redis-GET+json", "ratio"); ok {
		fmt.Fprintf(w, "| Redis hit vs go-redis GET + json.Unmarshal (paired) | ×%.3f | ≤ ×1.05 (%s) |\n", v, met(v <= 1.05))
	}
	if v, ok := r.get("Paired/path=local-hit/cacheguard-vs-ristretto", "ratio"); ok {
		allocs, _ := r.get("LocalHit/impl=cacheguard", "allocs/op")
		fmt.Fprintf(w, "| local hit vs raw ristretto Get (paired) | ×%.2f, %s allocs/op | ≤ ×1.3, 0 allocs (%s) |\n", v, fmtNum(allocs), met(v <= 1.3 && allocs == 0))
	}
	nl, ok1 := r.get("Zipfian/impl=cacheguard", "sec/op")
	hk, ok2 := r.get("Zipfian/impl=cacheguard+hotkeys", "sec/op")
	rtNL, ok3 := r.get("Zipfian/impl=cacheguard", "redis-roundtrips/op")
	rtHK, ok4 := r.get("Zipfian/impl=cacheguard+hotkeys", "redis-roundtrips/op")
	if ok1 && ok2 && ok3 && ok4 && hk > 0 && rtNL > 0 {
		fmt.Fprintf(w, "| zipfian reads with hot-key promotion vs without a local tier | ×%.2f throughput, %.0f %% of Redis round trips saved | more throughput, fewer round trips |\n",
			nl/hk, 100*(1-rtHK/rtNL))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cacheguard against the best of the other libraries on each workload (medians ± their 90 % confidence intervals; `ahead`/`behind` only when the two intervals do not overlap, `on par` otherwise, and also within 5 % on the rows marked * whose physical floor every library shares, one round trip per Redis hit; with the ratio of the medians). A local tier is compared at the others' capacity: they keep up to 10 000 rows, and so does cacheguard's hot-key tier (k = 10 000 promoted rows); the smaller setting k = 1000 of the zipfian table below keeps a tenth as many rows and makes correspondingly more round trips. On the rows marked †, the libraries took turns in one loop: there the verdict comes from the paired ratio instead, cacheguard's figure over the other's in the same round, whose median over the rounds of a pass and interval over the passes are given (`ahead`/`behind` when that interval excludes 1):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | measure | cacheguard | best other | raw go-redis | cacheguard vs best |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, h := range headlines {
		cg, ok := r.get(h.prefix+"impl="+h.cacheguard, h.unit)
		if !ok {
			continue
		}
		cgv := r.by[h.prefix+"impl="+h.cacheguard][h.unit]
		bestName, best, found := "", 0.0, false
		var bestv value
		for _, n := range r.rows(h.prefix) {
			impl := implOf(n)
			// Other libraries only: not cacheguard's variants, not the
			// baselines, not the raw go-redis column, not parallel runs.
			if impl == "" || strings.HasPrefix(impl, "cacheguard") || impl == "go-redis" ||
				contains(h.exclude, impl) || strings.Contains(strings.TrimPrefix(n, h.prefix), "/") {
				continue
			}
			v, ok := r.get(n, h.unit)
			if !ok {
				continue
			}
			if !found || (h.higherBetter && v > best) || (!h.higherBetter && v < best) {
				bestName, best, found = impl, v, true
				bestv = r.by[n][h.unit]
			}
		}
		naive := ""
		if v, ok := r.get(h.prefix+"impl=go-redis", h.unit); ok {
			naive = h.format(v)
		}
		bestCell, verdict := "", ""
		paired := false
		if found {
			bestCell = fmt.Sprintf("%s (%s)", withCI(h.format(best), bestv), bestName)
			verdict = compare(cgv, bestv, h.higherBetter, h.sharedFloor)
			if pr, ok := r.by[h.prefix+"impl="+bestName][pairedUnit(h.cacheguard, h.unit)]; ok {
				verdict, paired = comparePaired(pr, h.higherBetter, h.sharedFloor), true
			}
		}
		workload := h.workload
		if h.sharedFloor {
			workload += " *"
		}
		if paired {
			workload += " †"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", workload, h.measure, withCI(h.format(cg), cgv), bestCell, naive, verdict)
	}
	fmt.Fprintln(w)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// withCI appends a summary's interval to a formatted cell.
func withCI(cell string, v value) string {
	if cell == "" {
		return ""
	}
	switch ci := strings.TrimPrefix(v.ci, "±"); ci {
	case "", "0%":
		return cell
	default:
		return cell + " ±" + ci
	}
}

// floorTolerance is how far apart two medians may be and still be on par
// on a measure whose physical floor every library shares.
const floorTolerance = 0.05

// compare states how cacheguard's summary cg stands against the best other:
// ahead or behind only when their confidence intervals do not overlap and,
// with sharedFloor, the medians differ by more than floorTolerance.
func compare(cg, best value, higherBetter, sharedFloor bool) string {
	cgLo, cgHi, ok1 := cg.interval()
	bLo, bHi, ok2 := best.interval()
	if higherBetter {
		cgLo, cgHi, bLo, bHi = -cgHi, -cgLo, -bHi, -bLo
	}
	ratio := ""
	if best.v != 0 {
		ratio = fmt.Sprintf(" (×%.2f)", math.Abs(cg.v/best.v))
	}
	switch {
	case sharedFloor && best.v != 0 && math.Abs(cg.v/best.v-1) <= floorTolerance:
		return "on par" + ratio
	case !ok1 || !ok2:
		return "undecided: no interval" + ratio
	case cgHi < bLo:
		return "ahead" + ratio
	case cgLo > bHi:
		return "behind" + ratio
	default:
		return "on par" + ratio
	}
}

// pairedUnit is the unit under which an interleaved benchmark reports, on
// a library's row, the paired ratio of cacheguard variant cg over that
// library on unit (interleave_test.go).
func pairedUnit(cg, unit string) string { return "ratio-" + cg + "-" + unit }

// comparePaired states how cacheguard stands on a paired ratio (its figure
// over the other library's in the same round): ahead or behind only when
// the ratio's interval excludes 1 and, with sharedFloor, its median is
// more than floorTolerance away from 1.
func comparePaired(ratio value, higherBetter, sharedFloor bool) string {
	lo, hi, ok := ratio.interval()
	text := fmt.Sprintf(" (×%.2f", ratio.v)
	if ci := strings.TrimPrefix(ratio.ci, "±"); ci != "" && ci != "0%" {
		text += " ±" + ci
	}
	text += " paired)"
	better, worse := hi < 1, lo > 1
	if higherBetter {
		better, worse = lo > 1, hi < 1
	}
	switch {
	case sharedFloor && math.Abs(ratio.v-1) <= floorTolerance:
		return "on par" + text
	case !ok:
		return "undecided: no interval" + text
	case better:
		return "ahead" + text
	case worse:
		return "behind" + text
	default:
		return "on par" + text
	}
}
