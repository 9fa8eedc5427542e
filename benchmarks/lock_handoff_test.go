package benchmarks

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handoff between processes: this process and a child (the test binary
// re-executed) take one lock in turn. Each holds it for handoffHold, notes
// the time, releases it, and leaves it alone for handoffGap before asking
// again. The hold is longer than the gap, so the other process is always
// already waiting when the holder releases: what is timed is the wake-up,
// not the benchmark's own pauses. (With a gap longer than the hold, the
// waiter of a fast lock would often not be waiting yet, and its "latency"
// would be the rest of its own sleep.) The gap is longer than a polling
// waiter's retry interval plus a round trip, so a polling library still
// gets the lock before the releaser asks again. The handoff latency is from
// the holder's release to the moment the waiter in the other process holds
// the lock; both clocks are the machine's wall clock. A release that the
// same process takes back (the waiter was not woken within the gap) is
// counted as missed, not timed.

const (
	handoffHold = 5 * time.Millisecond
	handoffGap  = 3 * time.Millisecond
	// Environment of the child.
	handoffImplEnv   = "CACHEGUARD_BENCH_HANDOFF_IMPL"
	handoffKeyEnv    = "CACHEGUARD_BENCH_HANDOFF_KEY"
	handoffRoundsEnv = "CACHEGUARD_BENCH_HANDOFF_ROUNDS"
)

// BenchmarkLockHandoff reports the p50 and p99 handoff latency between two
// processes; ns/op is the time per handoff, missed/op the share of releases
// the releaser took back.
func BenchmarkLockHandoff(b *testing.B) {
	for _, impl := range lockImpls(true) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			key := "bench:lock:handoff:" + impl.name + ":" + nonce()
			rounds := max(b.N/2, 1)
			ctl := newClient(b)
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockHandoffChild$", "-test.count=1")
			cmd.Env = append(os.Environ(),
				childRedisEnv+"="+redisAddr(b),
				handoffImplEnv+"="+impl.name,
				handoffKeyEnv+"="+key,
				handoffRoundsEnv+"="+strconv.Itoa(rounds))
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			b.ResetTimer()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			err := handoffLoop(b, impl, key, "parent", rounds)
			if werr := cmd.Wait(); werr != nil {
				b.Fatalf("child: %v\n%s", werr, out.String())
			}
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			lat, missed := handoffs(b, ctl, key)
			if len(lat) == 0 {
				b.Fatal("no handoff")
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-us")
			b.ReportMetric(float64(missed)/float64(missed+len(lat)), "missed/op")
			ctl.Del(context.Background(), key+":events")
		})
	}
}

// TestLockHandoffChild is the other process of BenchmarkLockHandoff.
func TestLockHandoffChild(t *testing.T) {
	name := os.Getenv(handoffImplEnv)
	if name == "" {
		t.Skip("run by BenchmarkLockHandoff")
	}
	rounds, _ := strconv.Atoi(os.Getenv(handoffRoundsEnv))
	for _, impl := range lockImpls(true) {
		if impl.name == name {
			if err := handoffLoop(t, impl, os.Getenv(handoffKeyEnv), "child", rounds); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("unknown library %q", name)
}

func handoffLoop(tb testing.TB, impl lockImpl, key, me string, rounds int) error {
	var calls atomic.Int64
	take := impl.open(tb, key, &calls)
	ctl := newClient(tb)
	ctx := context.Background()
	events := key + ":events"
	for i := 0; i < rounds; i++ {
		unlock, err := take(ctx)
		if err != nil {
			return err
		}
		acq := time.Now().UnixNano()
		ctl.RPush(ctx, events, fmt.Sprintf("a %s %d", me, acq))
		time.Sleep(handoffHold)
		rel := time.Now().UnixNano()
		if err := unlock(); err != nil {
			return err
		}
		ctl.RPush(ctx, events, fmt.Sprintf("r %s %d", me, rel))
		time.Sleep(handoffGap)
	}
	return nil
}

// handoffs pairs each release with the next acquisition, in the order of
// their timestamps (a release is noted after its Unlock returns, with the
// time Unlock was called).
func handoffs(tb testing.TB, ctl *redis.Client, key string) (lat []time.Duration, missed int) {
	list, err := ctl.LRange(context.Background(), key+":events", 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	type event struct {
		kind, who string
		at        int64
	}
	evs := make([]event, len(list))
	for i, e := range list {
		fmt.Sscan(e, &evs[i].kind, &evs[i].who, &evs[i].at)
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	var relBy string
	var relAt int64
	for _, e := range evs {
		kind, who, at := e.kind, e.who, e.at
		switch {
		case kind == "r":
			relBy, relAt = who, at
		case relBy == "":
		case who != relBy:
			lat = append(lat, time.Duration(at-relAt))
			relBy = ""
		default:
			missed++
			relBy = ""
		}
	}
	return lat, missed
}

// BenchmarkLockWaiters: 1,000 goroutines of one client wait for 1,000
// different locks held by another client. conns is the number of
// connections the server counts while they wait, beyond those open before
// they started: the polling libraries use the go-redis pool, up to its size
// (10 per CPU); cacheguard uses the pool for its attempts plus one
// subscriber connection.
func BenchmarkLockWaiters(b *testing.B) {
	const locks = 1000
	for _, impl := range lockImpls(true) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			ctl := newClient(b)
			ctx := context.Background()
			var most int64
			for n := 0; b.Loop(); n++ {
				prefix := fmt.Sprintf("bench:lock:waiters:%s:%s:", impl.name, nonce())
				var calls atomic.Int64
				holder := impl.client(b, &calls)
				waiter := impl.client(b, &calls)
				unlocks := make([]func() error, locks)
				for i := range unlocks {
					u, err := holder(prefix + strconv.Itoa(i))(ctx)
					if err != nil {
						b.Fatal(err)
					}
					unlocks[i] = u
				}
				before := connectedClients(b, ctl)
				var done sync.WaitGroup
				for i := 0; i < locks; i++ {
					done.Add(1)
					go func() {
						defer done.Done()
						u, err := waiter(prefix + strconv.Itoa(i))(ctx)
						if err != nil {
							b.Error(err)
							return
						}
						u()
					}()
				}
				time.Sleep(time.Second) // every waiter has tried and waits
				most = max(most, connectedClients(b, ctl)-before)
				for _, u := range unlocks {
					u()
				}
				done.Wait()
			}
			b.ReportMetric(float64(most), "conns")
		})
	}
}

func connectedClients(tb testing.TB, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "clients").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no connected_clients")
	return 0
}
