package cache

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// sharedTrips counts the round trips carrying the test's commands and holds
// them, step by step. The steps are command names in the order a caller
// sends them (a Get: its read, its lease, its fill). A round trip belongs to
// the first step it carries: it is counted under that step's name (under
// each name it carries if it carries none) and held until that step's
// release is closed.
//
// A round trip may carry two steps: a caller handed its reply by a pipeline
// may queue its next command before the pipeline's goroutine takes the
// commands queued meanwhile (the earlier step's), and then goes out with
// them. Held until the later step's release, such a round trip would hold
// the earlier step's commands, and with them every later command of their
// callers, for good.
type sharedTrips struct {
	rt    roundTrips
	mu    sync.Mutex
	trips map[string]int
	steps []*tripStep // nil: count only
}

type tripStep struct {
	name    string
	release chan struct{}
	cmds    int // commands of this step seen so far (held, or sent in an earlier step's round trip)
}

// newSharedTrips holds the test's round trips by steps (command names, in
// the order each caller sends them).
func newSharedTrips(t *testing.T, steps ...string) *sharedTrips {
	h := &sharedTrips{rt: roundTrips{prefix: prefixFor(t)}, trips: map[string]int{}}
	for _, name := range steps {
		h.steps = append(h.steps, &tripStep{name: name, release: make(chan struct{})})
	}
	return h
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

// step is the step named name, nil if none is.
func (h *sharedTrips) step(name string) *tripStep {
	for _, s := range h.steps {
		if s.name == name {
			return s
		}
	}
	return nil
}

// pass counts a round trip of cmds and holds it until the release of the
// first step it carries.
func (h *sharedTrips) pass(cmds []redis.Cmder) {
	h.mu.Lock()
	var names []string
	first := len(h.steps)
	for _, cmd := range cmds {
		if !h.rt.ours(cmd) {
			continue
		}
		name := cmd.Name()
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		for i, s := range h.steps {
			if s.name == name {
				s.cmds++
				first = min(first, i)
			}
		}
	}
	var release chan struct{}
	if first < len(h.steps) {
		h.trips[h.steps[first].name]++
		release = h.steps[first].release
	} else {
		for _, name := range names {
			h.trips[name]++
		}
	}
	h.mu.Unlock()
	if release != nil {
		<-release
	}
}

// release lets the round trips of the step named name go.
func (h *sharedTrips) release(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.step(name).release)
}

// waitSeenOrQueued waits until (at least) n of the test's commands of the
// step named name have reached the hook or wait in one of nq's queues (where
// the cache's own commands, a read of its generation say, may wait too).
func (h *sharedTrips) waitSeenOrQueued(t *testing.T, name string, nq transport.Node, n int) {
	t.Helper()
	var seen, waiting int
	defer func() {
		if t.Failed() {
			t.Logf("%s: %d held or sent, %d waiting; want %d in all", name, seen, waiting, n)
		}
	}()
	waitFor(t, func() bool {
		h.mu.Lock()
		seen = h.step(name).cmds
		h.mu.Unlock()
		waiting = 0
		for _, cmd := range nq.Waiting() {
			if cmd.Name() == name && h.rt.ours(cmd) {
				waiting++
			}
		}
		return seen+waiting >= n // more if a command is sent again (a retry)
	})
}

// N concurrent Gets of N different missing keys share round trips for
// their lease attempts and their fills as they do for their reads: each
// step's first round trips are held until the other Gets' commands of that
// step have queued behind them. A fill that went out with the leases (see
// sharedTrips) shares their round trip: it counts as one of theirs.
func TestMissesShareLeaseAndFillRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		const n = 32
		keys := batchKeys(n)
		steps := []string{"get", "set", "evalsha"} // the reads, the leases, the fills
		h := newSharedTrips(t, steps...)
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
		// command of that step is in them or queued behind them (or went
		// out with the step before).
		q := c.redis.NodeOf(context.Background(), prefixFor(t)+keys[0])
		for _, name := range steps {
			h.waitSeenOrQueued(t, name, q, n)
			h.release(name)
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
		if want := transport.ReadsInFlight + 1; leases > want || fills > want {
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
		q := c.redis.NodeOf(context.Background(), prefixFor(t)+keys[0])
		for _, step := range []struct {
			name  string
			write func(k string) error
		}{
			{"evalsha", func(k string) error { return c.Set(context.Background(), k, "v") }},
			{"unlink", func(k string) error { return c.Delete(context.Background(), k) }},
		} {
			h := newSharedTrips(t, step.name)
			rdb.AddHook(h)
			errs := make(chan error, n)
			for _, k := range keys {
				go func() { errs <- step.write(k) }()
			}
			h.waitSeenOrQueued(t, step.name, q, n)
			h.release(step.name)
			for range keys {
				if err := recvOr(t, errs, "a write"); err != nil {
					t.Error(err)
				}
			}
			h.mu.Lock()
			trips := h.trips[step.name]
			h.steps = nil // the next step's hook counts from here
			h.mu.Unlock()
			if want := transport.ReadsInFlight + 1; trips > want {
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
		h := newSharedTrips(t, "evalsha")
		rdb.AddHook(h)
		var evals atomic.Int64
		rdb.AddHook(flushBeforeBatch{t, rdb, &h.rt, &evals}) // the batch finds no script either
		errs := make(chan error, n)
		for _, k := range keys {
			go func() { errs <- c.Set(ctx, k, "v-"+k) }()
		}
		h.waitSeenOrQueued(t, "evalsha", c.redis.NodeOf(ctx, prefixFor(t)+keys[0]), n)
		h.release("evalsha")
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
