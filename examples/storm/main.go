// Command storm puts a naive cache-aside and cacheguard through the storms
// that bring databases down, against the same database, and prints what the
// database went through each time.
//
// The database is a real SQL database (an in-memory SQLite) behind a small
// connection pool: every query holds a connection for a fixed latency, and a
// query that finds no free connection within the queue wait is refused, as an
// overloaded database would refuse it. Requests arrive at a fixed rate, as
// users' do, whether or not earlier ones have been answered. The storms:
//
//   - penetration: a flood of requests for ids that do not exist;
//   - avalanche: many keys filled at once, then read past their expiry;
//   - restart: Redis restarts, empty, under the read load;
//   - breakdown: thousands of reads a second of one hot key that expires;
//   - zipfian: skewed everyday traffic, where hot keys move to the local tier.
//
// The naive cache is GET; on a miss query the database and SET with a fixed
// TTL. cacheguard runs with one configuration for all of them: a local Bloom
// filter, TTL jitter, leases and a local tier for hot keys; and once more
// without the local tier, to show what Redis and leases do alone.
//
// The restart storm needs a Redis this program started: it is skipped with
// -redis or REDIS_URL, and on miniredis a FLUSHALL stands in for it. On
// miniredis, which serves from this process and competes with the load for
// its CPU, every storm runs at half size unless -rate, -db-conns or -keys say
// otherwise.
//
//	go run ./examples/storm                      # spawned redis-server, else miniredis
//	go run ./examples/storm -plot storm.svg      # and draw the queries over time
//	go run ./examples/storm -only breakdown      # one storm
//	go run ./examples/storm -redis localhost:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cacheguard/cacheguard/internal/devredis"
	"github.com/redis/go-redis/v9"
)

func main() {
	cfg := defaultConfig()
	addr := flag.String("redis", "", "Redis address (host:port, comma-separated for a cluster, or a redis:// URL); default $REDIS_URL, else a spawned redis-server, else miniredis")
	plot := flag.String("plot", "", "write a chart of each storm over time (database queries, refusals, failed requests, p99) to this SVG file")
	only := flag.String("only", "", "run only these scenarios (comma-separated: "+strings.Join(scenarioNames(), ",")+")")
	flag.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests per second (the breakdown sends twice as many)")
	flag.Float64Var(&cfg.Scale, "scale", cfg.Scale, "multiply every scenario's durations and TTLs by this")
	flag.IntVar(&cfg.Rows, "rows", cfg.Rows, "rows in the database")
	flag.IntVar(&cfg.Keys, "keys", cfg.Keys, "keys filled beforehand in the avalanche, restart and zipfian scenarios")
	flag.IntVar(&cfg.DBConns, "db-conns", cfg.DBConns, "database connections (queries running at once)")
	flag.DurationVar(&cfg.DBLatency, "db-latency", cfg.DBLatency, "time one query holds its connection")
	flag.DurationVar(&cfg.DBWait, "db-wait", cfg.DBWait, "longest wait for a free connection before a query is refused")
	flag.DurationVar(&cfg.HotExtra, "hot-extra", cfg.HotExtra, "breakdown: extra latency of the hot row's query")
	flag.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "each request's deadline")
	flag.Parse()
	sized := false // whether the load was sized by hand
	flag.Visit(func(f *flag.Flag) { sized = sized || f.Name == "rate" || f.Name == "db-conns" || f.Name == "keys" })

	// go-redis logs every failed reconnect while Redis restarts; the
	// requests those failures hit are counted in the tables instead.
	redis.SetLogger(quietLogger{})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, cfg, *addr, *plot, *only, !sized, os.Stdout)
	stop()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "storm: interrupted")
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
}

// run runs the picked scenarios against the Redis at addr (or the embedded
// default) and prints their tables. With fit, a load sized for a real server
// is halved when the embedded default turns out to be miniredis.
func run(ctx context.Context, cfg config, addr, plotFile, only string, fit bool, out io.Writer) error {
	picked, err := pick(only)
	if err != nil {
		return err
	}
	if plotFile != "" && !strings.EqualFold(filepath.Ext(plotFile), ".svg") {
		return fmt.Errorf("-plot %s: the chart is an SVG file; name it *.svg", plotFile)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	rs, err := devredis.Open(addr)
	if err != nil {
		return err
	}
	defer rs.Close()

	halved := fit && rs.Kind == "miniredis"
	if halved {
		// miniredis serves from this process, on the CPU the load
		// itself needs: at the full rate it, not the database, would
		// be what gives way.
		cfg.Rate /= 2
		cfg.DBConns = max(1, cfg.DBConns/2)
		cfg.Keys = max(1, cfg.Keys/2)
	}
	e, err := newEnv(ctx, cfg, rs.Client, out)
	if err != nil {
		return err
	}
	defer e.Close()
	switch rs.Kind {
	case "miniredis":
		e.restartNote = " (miniredis: FLUSHALL stands in for the restart)"
		fallthrough
	case "redis-server":
		e.restart = rs.Restart
		e.dial = func() redis.UniversalClient { return failFastClient(rs.Addr) }
	}

	fmt.Fprintf(out, "redis: %s at %s\n", rs.Kind, rs.Addr)
	if halved {
		fmt.Fprintf(out, "  miniredis runs inside this process and shares its CPU, so the storms run at half size\n"+
			"  (%.0f requests/s, %d database connections, %d keys); with redis-server on PATH they run at full size\n",
			cfg.Rate, cfg.DBConns, cfg.Keys)
	}
	fmt.Fprintf(out, "database: SQLite, %d rows, %d connections, %v per query, refused after %v without a connection (capacity %.0f queries/s)\n",
		cfg.Rows, cfg.DBConns, cfg.DBLatency, cfg.DBWait, e.db.capacityPer(time.Second))
	fmt.Fprintf(out, "naive: GET; on a miss query the database and SET with a fixed TTL\n")
	fmt.Fprintf(out, "cacheguard: local Bloom filter, TTL jitter ±%.0f%%, null caching, leases, local tier for hot keys\n", guardJitter*100)
	fmt.Fprintf(out, "%s: cacheguard as above without the local tier\n\n", modeNoLocal)

	m := newMachine()
	results, err := runAll(ctx, e, picked, func(r scenarioResult) { printScenario(out, r) })
	m.finish()
	fmt.Fprintf(out, "machine: %s\n", m)
	if plotFile != "" && len(results) > 0 {
		if perr := savePlot(plotFile, results, cfg, m); perr != nil {
			err = errors.Join(err, perr)
		} else {
			fmt.Fprintf(out, "chart written to %s\n", absPath(plotFile))
		}
	}
	return err
}

// runAll runs the scenarios in order, handing each result to done as soon as
// it is in; on error it returns what it has.
func runAll(ctx context.Context, e *env, picked []scenario, done func(scenarioResult)) ([]scenarioResult, error) {
	var results []scenarioResult
	for _, s := range picked {
		r, err := runScenario(ctx, e, s)
		if err != nil {
			return results, err
		}
		results = append(results, r)
		done(r)
	}
	return results, nil
}

// absPath is name made absolute, or name where that fails.
func absPath(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

func savePlot(name string, results []scenarioResult, cfg config, m *machine) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := writePlot(f, results, cfg, m); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.name)
	}
	return names
}

// pick returns the scenarios named in a comma-separated list, all for "".
func pick(only string) ([]scenario, error) {
	all := scenarios()
	if only == "" {
		return all, nil
	}
	want := strings.Split(only, ",")
	var out []scenario
	for _, s := range all {
		if slices.Contains(want, s.name) {
			out = append(out, s)
		}
	}
	for _, w := range want {
		if !slices.Contains(scenarioNames(), w) {
			return nil, fmt.Errorf("-only: no scenario %q (have %s)", w, strings.Join(scenarioNames(), ", "))
		}
	}
	return out, nil
}

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// isTerminal reports whether w is a terminal, where progress lines are
// rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
