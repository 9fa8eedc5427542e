package consistency

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A reader loads the old row, then a write runs before the reader fills.
// Update's first delete removes the reader's lease, so its fill is refused and
// it loads again: the reader gets the new row, and right after Update returns,
// before the second delete could have run (the clock has not moved), the
// cache holds it.
func TestUpdateBetweenReadersLoadAndFill(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := newFakeClock()
		c := newCache[int](t, rdb)
		q := newQueue(t, rdb, withClock(clk))
		users := register(t, q, "users", c)
		d := newDB()
		d.write("1", false, clk.Now(), 0)

		loaded, resume := make(chan struct{}), make(chan struct{})
		var loads atomic.Int64
		load := func(_ context.Context, key string) (int, error) {
			v, _ := d.primary(key)
			if loads.Add(1) == 1 {
				close(loaded)
				<-resume
			}
			return v, nil
		}
		got := make(chan int)
		go func() {
			v, _ := c.Get(ctx, "1", load)
			got <- v
		}()
		await(t, loaded, "the reader loading") // it holds version 1 and its lease, not yet filled
		err := users.Update(ctx, []string{"1"}, func(context.Context) error {
			d.write("1", false, clk.Now(), 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		close(resume)
		if v := await(t, got, "the reader returning"); v != 2 {
			t.Fatalf("reader got %d, want the 2 it reloaded after its fill was refused", v)
		}
		if n := c.Stats().RejectedFills; n != 1 {
			t.Fatalf("rejected fills = %d, want the reader's one", n)
		}
		if v, err := c.Get(ctx, "1", load); err != nil || v != 2 {
			t.Fatalf("after Update: %d, %v; want 2", v, err)
		}
		if n := loads.Load(); n != 2 {
			t.Fatalf("%d loads, want 2 (the refused one and the reload, which is cached)", n)
		}
	})
}

// A reader loads from a replica that has not applied the write yet, after
// the first delete: its fill lands and the cache holds the old row. The
// second delete, exactly the delay after the write, removes it.
func TestSecondDeleteRemovesFillFromLaggingReplica(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		clk := newFakeClock()
		w := newDrainWatch()
		c := newCache[int](t, rdb)
		q := newQueue(t, rdb, withClock(clk), WithDelay(500*time.Millisecond),
			withHooks(hooks{afterDrain: w.hook}))
		users := register(t, q, "users", c)
		d := newDB()
		d.write("1", false, clk.Now(), 0)
		var loads atomic.Int64
		load := func(_ context.Context, key string) (int, error) {
			loads.Add(1)
			v, _ := d.replica(key, clk.Now())
			return v, nil
		}
		if v, _ := c.Get(ctx, "1", load); v != 1 {
			t.Fatalf("warm-up read %d", v)
		}
		err := users.Update(ctx, []string{"1"}, func(context.Context) error {
			d.write("1", false, clk.Now(), 100*time.Millisecond)
			// A reader between the first delete and the replica catching up.
			if v, _ := c.Get(ctx, "1", load); v != 1 {
				t.Errorf("lagging read %d, want 1", v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(100 * time.Millisecond) // the replica has the write now
		for _, step := range []time.Duration{0, 399 * time.Millisecond} {
			clk.Advance(step)
			if v, _ := c.Get(ctx, "1", load); v != 1 {
				t.Fatalf("%v before the second delete: %d, want the stale 1 still cached", step, v)
			}
		}
		if n := loads.Load(); n != 2 {
			t.Fatalf("%d loads before the second delete, want 2", n)
		}
		clk.Advance(time.Millisecond) // exactly the delay after the write
		w.waitSettled(t, 1)
		if v, _ := c.Get(ctx, "1", load); v != 2 {
			t.Fatalf("after the second delete: %d, want 2", v)
		}
		if st := q.Stats(); st.Done != 1 || st.Recorded != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// The writer process is killed right after its write commits, before it
// could move or run the second delete. Another instance finds the recorded
// delete and runs it, removing the stale value a lagging reader filled.
func TestSecondDeleteSurvivesKilledWriter(t *testing.T) {
	if _, ok := redistest.IsChild(); ok {
		killedWriter(t)
		return
	}
	ctx := context.Background()
	srv, rdb := redistest.Single(t)
	row := filepath.Join(t.TempDir(), "row")
	if err := os.WriteFile(row, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), redistest.ChildEnv+"=0", redistest.RunEnv(t), "CG_TEST_REDIS="+srv.Addr, "CG_TEST_ROW="+row)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("writer process was not killed: %v\n%s", err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer process ended with %v, want SIGKILL\n%s", err, out)
	}

	clk := newFakeClock()
	w := newDrainWatch()
	c := newCache[string](t, rdb)
	q := newQueue(t, rdb, withClock(clk), withHooks(hooks{afterDrain: w.hook}))
	register(t, q, "users", c)
	var loads atomic.Int64
	load := func(context.Context, string) (string, error) {
		loads.Add(1)
		b, err := os.ReadFile(row)
		return string(b), err
	}
	if v, _ := c.Get(ctx, "1", load); v != "1" || loads.Load() != 0 {
		t.Fatalf("after the crash the cache holds %q (loads %d), want the stale 1", v, loads.Load())
	}
	if n, err := q.Pending(ctx); err != nil || n != 1 {
		t.Fatalf("pending = %d, %v; want the recorded second delete", n, err)
	}
	clk.Advance(killedGrace + defaultConfig().delay)
	w.waitSettled(t, 1)
	if v, _ := c.Get(ctx, "1", load); v != "2" {
		t.Fatalf("after the other instance's delete: %q, want 2", v)
	}
	if n, _ := q.Pending(ctx); n != 0 {
		t.Fatalf("pending = %d after the delete", n)
	}
}

const killedGrace = 2 * time.Second

// killedWriter runs in the child process: it updates row 1 and dies right
// after the write, with a stale value in the cache.
func killedWriter(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("CG_TEST_REDIS")})
	row := os.Getenv("CG_TEST_ROW")
	c := newCache[string](t, rdb)
	q := newQueue(t, rdb, WithoutWorker(), WithWriteGrace(killedGrace))
	users := register(t, q, "users", c)
	users.Update(ctx, []string{"1"}, func(context.Context) error {
		if err := os.WriteFile(row, []byte("2"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A reader after the first delete, served by a replica that has
		// not applied the write, fills the old row.
		c.Get(ctx, "1", func(context.Context, string) (string, error) { return "1", nil })
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	t.Fatal("survived SIGKILL")
}

// When the delete cannot be recorded, the write does not run.
func TestUpdateNotRunWhenQueueUnreachable(t *testing.T) {
	ctx := context.Background()
	srv, _ := redistest.Single(t)
	rdb := noRetryClient(t, srv)
	c := newCache[string](t, redistest.SharedSingle(t))
	q := newQueue(t, rdb, WithTimeout(time.Second))
	users := register(t, q, "users", c)
	srv.Kill()
	wrote := false
	err := users.Update(ctx, []string{"1"}, func(context.Context) error { wrote = true; return nil })
	if !errors.Is(err, ErrRedis) {
		t.Fatalf("err = %v, want ErrRedis", err)
	}
	if wrote {
		t.Fatal("the write ran although its second delete was not recorded")
	}
}

// A failed write still gets its second delete (it may have committed), and
// Update returns the write's error.
func TestUpdateReturnsWriteErrorAndStillDeletes(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	w := newDrainWatch()
	c := newCache[string](t, rdb)
	q := newQueue(t, rdb, withClock(clk), withHooks(hooks{afterDrain: w.hook}))
	users := register(t, q, "users", c)
	boom := errors.New("commit ack lost")
	err := users.Update(ctx, []string{"a", "b"}, func(context.Context) error {
		c.Set(ctx, "a", "filled during the write")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	clk.Advance(defaultConfig().delay)
	w.waitSettled(t, 1)
	if n := rdb.Exists(ctx, prefixFor(t)+"c:a").Val(); n != 0 {
		t.Fatal("second delete did not run after a failed write")
	}
}

func TestUpdateRejectsBadInput(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	q := newQueue(t, rdb, WithoutWorker())
	users := register(t, q, "users", newCache[string](t, rdb))
	ctx := context.Background()
	nop := func(context.Context) error { return nil }
	if err := users.Update(ctx, nil, nop); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no keys: %v", err)
	}
	if err := users.Update(ctx, []string{"a", ""}, nop); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty key: %v", err)
	}
	if err := users.Update(ctx, []string{"a"}, nil); err == nil {
		t.Fatal("nil write accepted")
	}
	q.Close()
	if err := users.Update(ctx, []string{"a"}, nop); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// itoa keeps soak and test keys short.
func itoa(i int) string { return strconv.Itoa(i) }
