package lincheck

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

var (
	longFlag = flag.Bool("lincheck.long", false, "run long histories (also CACHEGUARD_LINCHECK=long)")
	seedFlag = flag.Uint64("lincheck.seed", 0, "seed of the operations' choices (0: from the clock)")
)

func TestMain(m *testing.M) {
	// Tests that kill servers or connections make go-redis log every failed
	// dial and read.
	redistest.MainQuiet(m)
}

func long() bool { return *longFlag || os.Getenv("CACHEGUARD_LINCHECK") == "long" }

// TestLinearizable records random concurrent histories on a single node and
// on a three-master cluster, with connections killed mid-run, and checks
// them: each key a register without a local tier (one instance, then
// three), bounded staleness with one, and with hot-key copies on the
// cluster.
func TestLinearizable(t *testing.T) {
	dur, checkTimeout := 1500*time.Millisecond, 30*time.Second
	switch {
	case long():
		dur, checkTimeout = 30*time.Second, 10*time.Minute
	case testing.Short():
		dur = 500 * time.Millisecond
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	cases := []workload{
		{name: "one-instance", instances: 1, workers: 6},
		{name: "cross-instance", instances: 3, workers: 3},
		{name: "local-tier", instances: 3, workers: 3, local: 100 * time.Millisecond},
	}
	copies := workload{name: "copies", instances: 3, workers: 3, copies: 100 * time.Millisecond}
	replicaReads := []workload{
		{name: "replica-reads", instances: 3, workers: 3, replicas: time.Second},
		{name: "replica-reads-local-tier", instances: 3, workers: 3, replicas: time.Second, local: 100 * time.Millisecond},
	}
	for _, top := range []struct {
		name      string
		start     func(*testing.T) servers
		workloads []workload
	}{
		{"single", single, cases},
		{"cluster", cluster, append(cases, copies)},
		// Clients that read replicas, which only WithReplicaReads may serve.
		{"replicas", replicated, replicaReads},
	} {
		t.Run(top.name, func(t *testing.T) {
			srv := top.start(t)
			for _, w := range top.workloads {
				w.kills, w.duration, w.seed = true, dur, seed
				t.Run(w.name, func(t *testing.T) {
					t.Logf("seed %d (-lincheck.seed=%d replays the choices)", seed, seed)
					h := run(t, srv, w)
					report, within := "", ""
					if !w.register() {
						report, within = checkBound(h, w.bound())
						within = fmt.Sprintf("; within the bound of %v: %s", w.bound(), within)
					} else {
						report = checkRegister(h, t.Name(), checkTimeout)
					}
					if report == "" {
						t.Logf("ok: %s%s", h.summary(), within)
						return
					}
					t.Error(report)
				})
			}
		})
	}
}
