package cache

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// sharedTrips counts the round trips carrying the test's commands, by the
// name of the command (a pipeline counts once per name it carries), and
// holds every round trip carrying a command named in holds until that
// name's release is closed.
type sharedTrips struct {
	rt    roundTrips
	mu    sync.Mutex
	trips map[string]int
	holds map[string]*tripHold
}

type tripHold struct {
	release chan struct{}
	cmds    int // commands held so far
}

func (h *sharedTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sharedTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.pass([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *sharedTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pass(cmds)
		return next(ctx, cmds)
	}
}

// pass counts a round trip of cmds and holds it if it carries a held name.
func (h *sharedTrips) pass(cmds []redis.Cmder) {
	h.mu.Lock()
	seen := map[string]bool{}
	var wait []chan struct{}
	for _, cmd := range cmds {
		if !h.rt.ours(cmd) {
			continue
		}
		name := cmd.Name()
		if hold := h.holds[name]; hold != nil {
			hold.cmds++
			if !seen[name] {
				wait = append(wait, hold.release)
			}
		}
		if !seen[name] {
			seen[name] = true
			h.trips[name]++
		}
	}
	h.mu.Unlock()
	for _, ch := range wait {
		<-ch
	}
}

// waitHeldOrQueued waits until (at least) n of the test's commands named
// name are held in round trips or waiting in one of nq's queues (where the
// cache's own commands, a read of its generation say, may wait too).
func (h *sharedTrips) waitHeldOrQueued(t *testing.T, name string, nq *nodeQueue, n int) {
	t.Helper()
	var held, waiting int
	defer func() {
		if t.Failed() {
			t.Logf("%s: %d held, %d waiting; want %d in all", name, held, waiting, n)
		}
	}()
	waitFor(t, func() bool {
		h.mu.Lock()
		held = h.holds[name].cmds
		h.mu.Unlock()
		waiting = 0
		for _, q := range []*cmdQueue{&nq.reads, &nq.writes} {
			q.mu.Lock()
			for _, g := range q.waiting {
				if g.cmd.Name() == name && h.rt.ours(g.cmd) {
					waiting++
				}
			}
			q.mu.Unlock()
		}
		return held+waiting >= n // more if a command is sent again (a retry)
	})
}

// N concurrent Gets of N different missing keys share round trips for
// their lease attempts and their fills as they do for their reads: each
// step's first round trips are held until the other Gets' commands of that
// step have queued behind them.
func TestMissesShareLeaseAndFillRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		const n = 32
		keys := batchKeys(n)
		steps := []string{"get", "set", "evalsha"} // the reads, the leases, the fills
		h := &sharedTrips{rt: roundTrips{prefix: prefixFor(t)}, trips: map[string]int{}, holds: map[string]*tripHold{}}
		for _, name := range steps {
			h.holds[name] = &tripHold{release: make(chan struct{})}
		}
		rdb.AddHook(h)
		load := func(_ context.Context, k string) (string, error) { return "row " + k, nil }
		answers := make([]chan getAnswer, n)
		for i, k := range keys {
			answers[i] = make(chan getAnswer, 1)
			go func() {
				v, err := c.Get(context.Background(), k, load)
				answers[i] <- getAnswer{v, err}
			}()
		}
		// Each step's first round trips are held until every Get's
		// command of that step is in them or queued behind them.
		q := c.reads.queue(context.Background(), c.rdb, prefixFor(t)+keys[0])
		for _, name := range steps {
			h.waitHeldOrQueued(t, name, q, n)
			close(h.holds[name].release)
		}
		for i, ch := range answers {
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "row "+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		h.mu.Lock()
		leases, fills := h.trips["set"], h.trips["evalsha"]
		h.mu.Unlock()
		t.Logf("round trips: %v", h.trips)
		if want := readsInFlight + 1; leases > want || fills > want {
			t.Errorf("%d round trips for the leases and %d for the fills of %d concurrent misses; want at most %d each", leases, fills, n, want)
		}
		checkFlightsIdle(t, c)
	})
}

// A burst of Sets (and of Deletes) of different keys shares round trips:
// the first ones are held until the others have queued behind them.
func TestWriteBurstSharesRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		const n = 32
		keys := batchKeys(n)
		if err := c.Set(context.Background(), "{q}warm", "v"); err != nil { // the script loaded
			t.Fatal(err)
		}
		q := c.reads.queue(context.Background(), c.rdb, prefixFor(t)+keys[0])
		for _, step := range []struct {
			name  string
			write func(k string) error
		}{
			{"evalsha", func(k string) error { return c.Set(context.Background(), k, "v") }},
			{"unlink", func(k string) error { return c.Delete(context.Background(), k) }},
		} {
			h := &sharedTrips{rt: roundTrips{prefix: prefixFor(t)}, trips: map[string]int{}, holds: map[string]*tripHold{step.name: {release: make(chan struct{})}}}
			rdb.AddHook(h)
			errs := make(chan error, n)
			for _, k := range keys {
				go func() { errs <- step.write(k) }()
			}
			h.waitHeldOrQueued(t, step.name, q, n)
			close(h.holds[step.name].release)
			for range keys {
				if err := recvOr(t, errs, "a write"); err != nil {
					t.Error(err)
				}
			}
			h.mu.Lock()
			trips := h.trips[step.name]
			h.holds = nil // the next step's hook counts from here
			h.mu.Unlock()
			if want := readsInFlight + 1; trips > want {
				t.Errorf("%d round trips carried the %s of %d concurrent writes; want at most %d", trips, step.name, n, want)
			}
		}
	})
}

// Scripts queued in a batch after the server lost its script cache (SCRIPT
// FLUSH) are answered NOSCRIPT and sent again with their bodies: every
// write of the burst lands.
func TestQueuedScriptsSurviveScriptFlush(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		const n = 32
		keys := batchKeys(n)
		flushScripts(t, ctx, rdb)
		h := &sharedTrips{rt: roundTrips{prefix: prefixFor(t)}, trips: map[string]int{}, holds: map[string]*tripHold{"evalsha": {release: make(chan struct{})}}}
		rdb.AddHook(h)
		var evals atomic.Int64
		rdb.AddHook(flushBeforeBatch{t, rdb, &h.rt, &evals}) // the batch finds no script either
		errs := make(chan error, n)
		for _, k := range keys {
			go func() { errs <- c.Set(ctx, k, "v-"+k) }()
		}
		h.waitHeldOrQueued(t, "evalsha", c.reads.queue(ctx, c.rdb, prefixFor(t)+keys[0]), n)
		close(h.holds["evalsha"].release)
		for range keys {
			if err := recvOr(t, errs, "a Set"); err != nil {
				t.Error(err)
			}
		}
		t.Logf("%d pipelines of EVAL", evals.Load())
		for _, k := range keys {
			if v, err := c.Get(ctx, k, noLoad); err != nil || v != "v-"+k {
				t.Errorf("Get(%s) = %q, %v after the burst", k, v, err)
			}
		}
	})
}

// flushBeforeBatch flushes the script cache before each pipeline carrying
// an EVALSHA of the test's keys, and counts the pipelines carrying an EVAL
// of them.
type flushBeforeBatch struct {
	t     *testing.T
	rdb   redis.UniversalClient
	rt    *roundTrips
	evals *atomic.Int64
}

func (f flushBeforeBatch) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f flushBeforeBatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f flushBeforeBatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "evalsha" && f.rt.ours(cmd) }) {
			flushScripts(f.t, ctx, f.rdb)
		}
		if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "eval" && f.rt.ours(cmd) }) {
			f.evals.Add(1)
		}
		return next(ctx, cmds)
	}
}
