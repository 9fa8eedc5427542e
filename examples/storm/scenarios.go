package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// scenario is one storm, run once through each cache.
type scenario struct {
	name string
	// about describes the storm for the report.
	about func(e *env) string
	// skip returns why the scenario cannot run here, or "".
	skip func(e *env) string
	// run runs the storm through one cache.
	run func(ctx context.Context, e *env, mode string) (runResult, error)
	// marks are the moments worth a line on the plot, read from the runs
	// where they depend on them.
	marks func(e *env, runs []runResult) []mark
	// modes are the caches it runs through; nil means all of them.
	modes []string
	// plotRedis plots Redis round trips instead of database queries.
	plotRedis bool
}

// mark is an event on a scenario's time axis; with to > at, a band.
type mark struct {
	at, to time.Duration
	label  string
}

// scenarioResult is one storm through both caches.
type scenarioResult struct {
	name, about string
	skipped     string // why it did not run
	runs        []runResult
	marks       []mark
	capacity    float64 // database queries per bucket at most
	plotRedis   bool
}

func scenarios() []scenario {
	return []scenario{penetration(), avalanche(), restart(), breakdown(), zipfian()}
}

// runScenario runs s through the naive cache, then through cacheguard with
// and without its local tier.
func runScenario(ctx context.Context, e *env, s scenario) (scenarioResult, error) {
	res := scenarioResult{name: s.name, about: s.about(e), capacity: e.db.capacityPer(bucket), plotRedis: s.plotRedis}
	if s.skip != nil {
		if why := s.skip(e); why != "" {
			res.skipped = why
			return res, nil
		}
	}
	runModes := s.modes
	if runModes == nil {
		runModes = modes
	}
	for _, mode := range runModes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.run(ctx, e, mode)
		if err != nil {
			return res, fmt.Errorf("%s, %s: %w", s.name, mode, err)
		}
		res.runs = append(res.runs, r)
	}
	if s.marks != nil {
		res.marks = s.marks(e, res.runs)
	}
	// A run cut short by an interrupt is not a result.
	return res, ctx.Err()
}

// penetration: a flood of requests for ids that exist nowhere. The naive
// cache cannot cache "no such row", so every request is a query; cacheguard's
// Bloom filter answers almost all of them in memory.
func penetration() scenario {
	dur := func(e *env) time.Duration { return e.cfg.scaled(2 * time.Second) }
	return scenario{
		name: "penetration",
		// The Bloom filter answers before any tier is asked: without the
		// local tier the run would be the same.
		modes: []string{modeNaive, modeGuard},
		about: func(e *env) string {
			return fmt.Sprintf("%.0f requests/s for %v, each for a random id that does not exist", e.cfg.Rate, dur(e))
		},
		run: func(ctx context.Context, e *env, mode string) (runResult, error) {
			l := e.load(e.cfg.Rate, dur(e), func(r *rand.Rand) string {
				return strconv.FormatInt(int64(e.cfg.Rows)+1+r.Int64N(1e15), 10)
			})
			spec := runSpec{scenario: "penetration", mode: mode, ttl: e.cfg.scaled(time.Minute), span: dur(e)}
			return e.run(ctx, spec, func(ctx context.Context, m *meter, c client) error {
				l.run(ctx, m, e.cfg.Seed, c.Get)
				return nil
			})
		},
	}
}

// avalanche: many keys are filled at once, then read uniformly past their
// expiry. With one fixed TTL they all expire in the same instant; cacheguard
// spreads every TTL over ±40%.
func avalanche() scenario {
	ttl := func(e *env) time.Duration { return e.cfg.scaled(2500 * time.Millisecond) }
	dur := func(e *env) time.Duration { return e.cfg.scaled(4 * time.Second) }
	return scenario{
		name: "avalanche",
		about: func(e *env) string {
			return fmt.Sprintf("%d keys filled at once with a %v TTL, then %.0f reads/s over them for %v",
				keys(e), ttl(e), e.cfg.Rate, dur(e))
		},
		marks: func(e *env, runs []runResult) []mark {
			// The TTLs run from the end of each run's fill, inside the run.
			var ms []mark
			for _, r := range runs {
				switch r.mode {
				case modeNaive:
					ms = append(ms, mark{at: r.filledAt + ttl(e), label: "naive: fixed TTL ends"})
				case modeGuard:
					lo := time.Duration(float64(ttl(e)) * (1 - guardJitter))
					hi := time.Duration(float64(ttl(e)) * (1 + guardJitter))
					ms = append(ms, mark{at: r.filledAt + lo, to: r.filledAt + hi, label: "cacheguard: jittered TTLs end"})
				}
			}
			return ms
		},
		run: func(ctx context.Context, e *env, mode string) (runResult, error) {
			spec := runSpec{scenario: "avalanche", mode: mode, ttl: ttl(e), span: dur(e)}
			return e.fillAndRead(ctx, spec, dur(e), 0)
		},
	}
}

// restart: the same filled keys, and Redis restarts, empty, under the read
// load. The naive cache sends every read to the database while Redis is
// down and every key to it once Redis is back.
func restart() scenario {
	dur := func(e *env) time.Duration { return e.cfg.scaled(3 * time.Second) }
	at := func(e *env) time.Duration { return e.cfg.scaled(time.Second) }
	return scenario{
		name: "restart",
		about: func(e *env) string {
			return fmt.Sprintf("%d keys filled, %.0f reads/s over them for %v; Redis restarts, empty, at %v%s",
				keys(e), e.cfg.Rate, dur(e), at(e), e.restartNote)
		},
		skip: func(e *env) string {
			if e.restart == nil {
				return "needs a Redis this program started; skipped with -redis / REDIS_URL"
			}
			return ""
		},
		marks: func(e *env, _ []runResult) []mark { return []mark{{at: at(e), label: "Redis restarts"}} },
		run: func(ctx context.Context, e *env, mode string) (runResult, error) {
			spec := runSpec{scenario: "restart", mode: mode, ttl: e.cfg.scaled(time.Minute), span: dur(e), fresh: true}
			return e.fillAndRead(ctx, spec, dur(e), at(e))
		},
	}
}

func keys(e *env) int { return min(e.cfg.Keys, e.cfg.Rows) }

// fillAndRead fills the first keys rows at once, then reads them uniformly
// for dur; with restartAt > 0 Redis is restarted that long after the fill.
func (e *env) fillAndRead(ctx context.Context, spec runSpec, dur, restartAt time.Duration) (runResult, error) {
	items, err := e.db.all(ctx, keys(e))
	if err != nil {
		return runResult{}, err
	}
	n := int64(len(items))
	l := e.load(e.cfg.Rate, dur, func(r *rand.Rand) string { return strconv.FormatInt(1+r.Int64N(n), 10) })
	return e.run(ctx, spec, func(ctx context.Context, m *meter, c client) error {
		if err := c.fill(ctx, items); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		m.markFilled()
		if restartAt <= 0 {
			l.run(ctx, m, e.cfg.Seed, c.Get)
			return nil
		}
		loadDone := make(chan struct{})
		go func() {
			defer close(loadDone)
			l.run(ctx, m, e.cfg.Seed, c.Get)
		}()
		err := sleep(ctx, restartAt-time.Since(m.start))
		if err == nil {
			err = e.restart()
		}
		<-loadDone
		return err
	})
}

// breakdown: one hot key, read by thousands of concurrent requests, expires.
// Its query is an expensive one. Every naive reader that misses before the
// first reload lands runs that query; cacheguard runs it once per expiry.
func breakdown() scenario {
	ttl := func(e *env) time.Duration { return e.cfg.scaled(time.Second) }
	dur := func(e *env) time.Duration { return e.cfg.scaled(3 * time.Second) }
	return scenario{
		name: "breakdown",
		about: func(e *env) string {
			return fmt.Sprintf("%.0f reads/s of one hot key for %v; its TTL is %v and its query takes %v",
				2*e.cfg.Rate, dur(e), ttl(e), e.cfg.DBLatency+e.cfg.HotExtra)
		},
		marks: func(e *env, runs []runResult) []mark {
			for _, r := range runs {
				if r.mode == modeNaive {
					return expiries(r.loadsAt, ttl(e), "naive: key expires")
				}
			}
			return nil
		},
		run: func(ctx context.Context, e *env, mode string) (runResult, error) {
			l := e.load(2*e.cfg.Rate, dur(e), func(*rand.Rand) string { return "1" })
			spec := runSpec{scenario: "breakdown", mode: mode, ttl: ttl(e), extra: e.cfg.HotExtra, span: dur(e)}
			return e.run(ctx, spec, func(ctx context.Context, m *meter, c client) error {
				l.run(ctx, m, e.cfg.Seed, c.Get)
				return nil
			})
		},
	}
}

// zipfian: everyday skewed traffic over the first keys rows, all of them
// cached beforehand. The
// database has nothing to do either way; what changes is Redis: cacheguard
// promotes the hottest keys to its in-process tier, so their reads never
// leave the process. Its panel plots Redis round trips.
func zipfian() scenario {
	dur := func(e *env) time.Duration { return e.cfg.scaled(2500 * time.Millisecond) }
	return scenario{
		name:      "zipfian",
		plotRedis: true,
		about: func(e *env) string {
			return fmt.Sprintf("%.0f reads/s for %v over %d keys, all cached beforehand, zipfian (s=1.1)", e.cfg.Rate, dur(e), keys(e))
		},
		run: func(ctx context.Context, e *env, mode string) (runResult, error) {
			items, err := e.db.all(ctx, keys(e))
			if err != nil {
				return runResult{}, err
			}
			var z *rand.Zipf
			l := e.load(e.cfg.Rate, dur(e), func(r *rand.Rand) string {
				if z == nil {
					z = rand.NewZipf(r, 1.1, 1, uint64(len(items)-1))
				}
				return strconv.FormatUint(z.Uint64()+1, 10)
			})
			spec := runSpec{scenario: "zipfian", mode: mode, ttl: e.cfg.scaled(10 * time.Minute), span: dur(e),
				prepare: func(ctx context.Context, c client) error { return c.fill(ctx, items) }}
			return e.run(ctx, spec, func(ctx context.Context, m *meter, c client) error {
				l.run(ctx, m, e.cfg.Seed, c.Get)
				return nil
			})
		},
	}
}

func (e *env) load(rate float64, dur time.Duration, key func(*rand.Rand) string) load {
	return load{rate: rate, duration: dur, inFlight: e.cfg.InFlight, timeout: e.cfg.Timeout, key: key}
}

// expiries returns when a key written with a fixed ttl by each burst of
// loads expires: every load of a burst writes it again, so the last one
// sets the expiry. A burst ends at a gap of half the TTL.
func expiries(loads []time.Duration, ttl time.Duration, label string) []mark {
	sorted := slices.Clone(loads)
	slices.Sort(sorted)
	var ms []mark
	for i, t := range sorted {
		if i+1 == len(sorted) || sorted[i+1]-t > ttl/2 {
			ms = append(ms, mark{at: t + ttl, label: label})
		}
	}
	return ms
}
