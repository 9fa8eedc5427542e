//go:build unix

package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// freezeBound is the local tier's bound in the freeze test (the health
// check's interval plus its timeout), and resumeSlack how many reads a
// resumed process may make before its freshness clock has caught up: a
// reader that runs before the ticker (with GOMAXPROCS=1 for a whole
// scheduling quantum) is stopped by the check one read in 128 makes, so
// more than 2,048 stale reads happen with a probability of about 1e-7.
// Counted in reads, not time: under the race detector a read takes ten
// microseconds, and 128 of them are more than a millisecond.
const (
	freezeInterval = time.Second
	freezeTimeout  = 100 * time.Millisecond
	freezeBound    = freezeInterval + freezeTimeout
	resumeSlack    = 2048
)

// An instance with a local tier is frozen (SIGSTOP, as a GC pause, a VM
// migration or a debugger would); another instance sets a new value; 3 s
// later the first resumes and reads in a tight loop: no read that began
// later than the bound after the write, and more than a millisecond after
// the process resumed, returns the old value. Before, freshness was judged
// by a clock that had not caught up with the freeze: 1,100 to 100,000
// stale reads, up to 3.02 s after the write.
func TestFrozenInstanceServesNothingPastTheBound(t *testing.T) {
	if _, child := redistest.IsChild(); child {
		freezeChild(t)
		return
	}
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	prefix := prefixFor(t)
	ctx := t.Context()
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			p := prefix + strconv.Itoa(procs) + ":"
			writer := newCacheWith(t, rdb, Values[string]{}, WithPrefix(p))
			if err := writer.Set(ctx, "k", "old"); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestFrozenInstanceServesNothingPastTheBound$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), redistest.ChildEnv+"=0", "CG_ADDRS="+redistest.Spec(rdb), "CG_PREFIX="+p,
				"GOMAXPROCS="+strconv.Itoa(procs))
			var out bytes.Buffer // read after Wait only
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Signal(syscall.SIGCONT); _ = cmd.Wait() }()
			waitKey(t, rdb, p+"ready")
			if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // stopped for sure
			if err := writer.Set(ctx, "k", "new"); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, p+"written", time.Now().UnixNano(), 0).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v\n%s", err, out.String())
			}
			t.Logf("child: %s", lastLine(out.String(), "stale="))
		})
	}
}

// freezeChild reads k from its local tier until told it was resumed and
// has read for a while, then counts the reads that began past the bound
// after the write and returned the old value.
func freezeChild(t *testing.T) {
	rdb := redistest.FromSpec(t, os.Getenv("CG_ADDRS"), nil)
	p := os.Getenv("CG_PREFIX")
	ctx := context.Background()
	c, err := New(rdb, Values[string]{}, WithPrefix(p), WithLocal(1<<20), WithLocalAdmitAll(),
		WithLocalTTL(time.Minute), WithInvalidationHealthCheck(freezeInterval, freezeTimeout), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	awaitSubscribed(t, c)
	load := func(context.Context, string) (string, error) { return "", ErrNotFound }
	for c.Stats().LocalHits < 10 {
		if _, err := c.Get(ctx, "k", load); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Set(ctx, p+"ready", 1, 0)
	type read struct{ at, n int64 } // when a read began, and its number
	var old []read                  // the reads that returned the old value
	var prev, resumed, resumedAt int64
	reads := int64(0)
	for {
		at := time.Now().UnixNano()
		v, err := c.Get(ctx, "k", load)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if v == "old" && len(old) < 1<<22 {
			old = append(old, read{at, reads})
		}
		if resumed == 0 && prev != 0 && at-prev > int64(time.Second) {
			resumed, resumedAt = at, reads // the gap is the freeze
		}
		prev = at
		if resumed != 0 && at-resumed > int64(500*time.Millisecond) {
			break
		}
	}
	written, err := rdb.Get(ctx, p+"written").Int64()
	if err != nil {
		t.Fatal(err)
	}
	stale, early, last := 0, 0, int64(0)
	for _, r := range old {
		switch {
		case r.at <= written+int64(freezeBound):
		case r.n-resumedAt < resumeSlack:
			early++ // read before the clock caught up with the freeze
		default:
			stale++
			last = r.at - resumed
		}
	}
	fmt.Printf("stale=%d in-first-reads=%d reads=%d\n", stale, early, reads)
	if stale > 0 {
		t.Fatalf("%d reads began more than %v after the write and %d reads after the resume and returned the old value, the last %v after the resume",
			stale, freezeBound, resumeSlack, time.Duration(last))
	}
}

func waitKey(t *testing.T, rdb redis.UniversalClient, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for rdb.Exists(t.Context(), key).Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never set", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastLine is the last line of out that contains s.
func lastLine(out, s string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}
