package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// env is what every run shares: Redis, the database, the Bloom filter.
type env struct {
	cfg config
	rdb redis.UniversalClient
	// restart empties Redis as a crash and restart would; nil when that is
	// not possible. restartNote says how it is done, for the report.
	restart     func() error
	restartNote string
	// dial connects a new client to the restartable server (see
	// failFastClient).
	dial func() redis.UniversalClient

	db     *database
	filter *bloom.Local
	calls  *callCounter
	runID  string
	prog   *progress
}

// newEnv opens the database and warms the Bloom filter up. The caller owns
// rdb; Close releases the rest.
func newEnv(ctx context.Context, cfg config, rdb redis.UniversalClient, out io.Writer) (*env, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	db, err := openDatabase(ctx, cfg.Rows, cfg.DBConns, cfg.DBLatency, cfg.DBWait)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	f, err := newFilter(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	var id [4]byte
	rand.Read(id[:])
	calls := &callCounter{}
	rdb.AddHook(calls)
	return &env{cfg: cfg, rdb: rdb, db: db, filter: f, calls: calls,
		runID: hex.EncodeToString(id[:]), prog: newProgress(out)}, nil
}

func (e *env) Close() error {
	e.calls.off.Store(true)
	return e.db.Close()
}

// runResult is one run: one scenario through one cache.
type runResult struct {
	mode        string
	requests    int64
	failed      int64
	errs        []errCount
	p50, p99    time.Duration
	queries     int64   // sent to the database
	refused     int64   // of queries, refused for overload
	series      []int64 // database queries per bucket
	redisSeries []int64 // Redis round trips per bucket
	refusedSer  []int64 // of series, refused for overload
	failedSer   []int64 // failed requests, by the bucket they were due in
	p99Series   []time.Duration
	loadsAt     []time.Duration // when each successful query ended
	filledAt    time.Duration   // when the warm-up fill inside the run ended
	peak        int64           // queries per second, over the busiest bucket
	redisCalls  int64           // round trips to Redis
	stats       *cache.Stats
	background  int64    // errors no caller saw
	samples     []string // a few of them
}

// client is a cache under test: the naive cache-aside or cacheguard.
type client interface {
	Get(ctx context.Context, key string) error
	fill(ctx context.Context, items []Item) error
	Close() error
}

// runSpec says how a scenario sets its caches up.
type runSpec struct {
	scenario string
	mode     string        // "naive" or "cacheguard"
	ttl      time.Duration // both caches' TTL; cacheguard jitters it
	extra    time.Duration // added to every query's latency
	span     time.Duration // how long the run lasts, for the meter
	fresh    bool          // use a new client (e.dial) instead of the shared one
	// prepare, if set, runs before the meter starts (a warm-up whose
	// traffic is not part of the storm).
	prepare func(ctx context.Context, c client) error
}

const (
	modeNaive = "naive"
	modeGuard = "cacheguard"
	// modeNoLocal is cacheguard with the same settings but no local tier:
	// what Redis and leases do alone.
	modeNoLocal = "no local tier"
)

// modes are the caches every scenario runs through, in order.
var modes = []string{modeNaive, modeGuard, modeNoLocal}

// guardJitter is cacheguard's TTL spread in every scenario.
const guardJitter = 0.4

// run builds the cache for spec, runs body against it with the database's
// queries counted on a fresh meter, and collects the figures.
func (e *env) run(ctx context.Context, spec runSpec, body func(ctx context.Context, m *meter, c client) error) (runResult, error) {
	prefix := fmt.Sprintf("storm:%s:%s:%s:", e.runID, spec.scenario, strings.ReplaceAll(spec.mode, " ", "-"))
	rdb := e.rdb
	if spec.fresh && e.dial != nil {
		rdb = e.dial()
		defer rdb.Close()
		rdb.AddHook(e.calls)
	}
	load := func(ctx context.Context, key string) (Item, error) { return e.db.find(ctx, key, spec.extra) }
	var (
		c client
		g *guard
	)
	switch spec.mode {
	case modeNaive:
		c = &naive{rdb: rdb, prefix: prefix, ttl: spec.ttl, load: load}
	case modeGuard, modeNoLocal:
		var err error
		g, err = newGuard(rdb, prefix, guardSettings{
			ttl: spec.ttl, jitter: guardJitter, filter: e.filter,
			hotCount: uint64(max(5, e.cfg.Rate/500)),
			dbConns:  e.cfg.DBConns,
			noLocal:  spec.mode == modeNoLocal,
		}, load)
		if err != nil {
			return runResult{}, err
		}
		c = g
	default:
		return runResult{}, fmt.Errorf("unknown mode %q", spec.mode)
	}

	if spec.prepare != nil {
		if err := spec.prepare(ctx, c); err != nil {
			c.Close()
			return runResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	m := newMeter(spec.span + 2*time.Second)
	e.db.setMeter(m)
	e.calls.meter.Store(m)
	calls := e.calls.n.Load()
	stop := e.prog.start(spec.scenario, spec.mode, spec.span, m)
	err := body(ctx, m, c)
	stop()
	e.db.setMeter(nil)
	e.calls.meter.Store(nil)
	calls = e.calls.n.Load() - calls
	cerr := c.Close()
	if err == nil {
		err = cerr
	}

	buckets := int(spec.span / bucket)
	m.mu.Lock()
	loadsAt, filledAt := m.loads, m.filled
	m.mu.Unlock()
	r := runResult{
		mode:        spec.mode,
		refusedSer:  m.timeline(m.refusedAt, buckets),
		failedSer:   m.timeline(m.failedAt, buckets),
		p99Series:   m.p99s(buckets + 1),
		loadsAt:     loadsAt,
		filledAt:    filledAt,
		requests:    m.requests.Load(),
		failed:      m.failed.Load(),
		errs:        m.errorCounts(),
		p50:         m.lat.quantile(0.50),
		p99:         m.lat.quantile(0.99),
		queries:     m.total.Load(),
		refused:     m.refused.Load(),
		series:      m.timeline(m.queries, int(spec.span/bucket)),
		redisSeries: m.timeline(m.redis, int(spec.span/bucket)),
		redisCalls:  calls,
	}
	r.peak = peak(r.series)
	if g != nil {
		st := g.c.Stats()
		r.stats = &st
		r.background = g.background.Load()
		r.samples = g.backgroundSamples()
	}
	return r, err
}
