package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A reader that loaded the old row before a writer's Delete must not write it
// back: its placeholder is gone, so its fill is refused. It then loads again,
// so neither it nor anyone who joined its load gets the old row.
func TestDeleteDuringLoadRejectsStaleFill(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		var mu sync.Mutex
		db := map[string]string{"k": "old"}
		read := make(chan struct{})
		resume := make(chan struct{})
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) {
			mu.Lock()
			v := db["k"]
			mu.Unlock()
			if loads.Add(1) == 1 {
				close(read) // the old row is read ...
				<-resume    // ... and the writer goes first
			}
			return v, nil
		}
		got := make(chan string)
		go func() {
			v, err := c.Get(ctx, "k", load)
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		<-read
		mu.Lock()
		db["k"] = "new"
		mu.Unlock()
		if err := c.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		// A caller arriving after the Delete does not join the old load.
		late := make(chan string)
		go func() {
			v, _ := c.Get(ctx, "k", load)
			late <- v
		}()
		if v := <-late; v != "new" {
			t.Fatalf("caller after Delete got %q", v)
		}
		close(resume)
		if v := <-got; v != "new" {
			t.Fatalf("slow reader got %q after its fill was refused, want the reloaded row", v)
		}
		if st := c.Stats(); st.RejectedFills != 1 {
			t.Fatalf("rejected fills %d, want 1", st.RejectedFills)
		}
		raw, _ := rdb.Get(ctx, prefixFor(t)+"k").Bytes()
		if e, ok := wire.DecodeEnvelope(raw); !ok || string(e.Payload) != "new" {
			t.Fatalf("Redis holds %q, want the new row", raw)
		}
	})
}

// A Set during a load wins over the fill.
func TestSetDuringLoadWins(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		c.hooks().AfterLoad = func(key string) {
			if err := c.Set(ctx, key, "set"); err != nil {
				t.Error(err)
			}
		}
		if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "loaded", nil }); err != nil {
			t.Fatal(err)
		}
		c.hooks().AfterLoad = nil
		v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "reloaded", nil })
		if err != nil || v != "set" {
			t.Fatalf("Get = %q, %v; want the Set value", v, err)
		}
	})
}

// Many goroutines of one process on one missing key: one load.
func TestConcurrentReadersLoadOnce(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		const n = 64
		var loads atomic.Int64
		release := make(chan struct{})
		var started, done sync.WaitGroup
		started.Add(n)
		done.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				defer done.Done()
				started.Done()
				v, err := c.Get(ctx, "hot", func(context.Context, string) (string, error) {
					loads.Add(1)
					<-release
					return "v", nil
				})
				if err != nil || v != "v" {
					t.Errorf("Get = %q, %v", v, err)
				}
			}()
		}
		started.Wait()
		close(release)
		done.Wait()
		if loads.Load() != 1 {
			t.Fatalf("loader ran %d times, want 1", loads.Load())
		}
	})
}

// N goroutines in each of P processes on one missing key with a slow loader:
// the loader runs once in total. The winner's loader holds until every other
// process has seen its lease, so each of them really waited, and until its
// lease has been extended stampedeExtensions times, so it ran longer than the
// lease and only the extensions kept the others out.
//
// The lease is long enough (1.5 s, extended every 0.5 s) that a busy machine
// cannot make the holder miss it: with a 150 ms lease, an extension delayed
// by 100 ms (a loaded 2-core machine running the race detector) let the lease
// lapse and a second process load, failing the test although nothing was
// wrong. What is asserted is the same: one load, every process waited, and
// the load outlived its lease.
func TestStampedeAcrossProcesses(t *testing.T) {
	if _, child := redistest.IsChild(); child {
		stampedeChild(t)
		return
	}
	const procs = 3
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		redistest.NeedServer(t) // children need an address they can reach
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		prefix := prefixFor(t)
		outs := redistest.Subprocesses(t, ctx, procs, "TestStampedeAcrossProcesses",
			"CG_ADDRS="+redistest.Spec(rdb), "CG_PREFIX="+prefix, fmt.Sprint("CG_PROCS=", procs))
		if n, _ := rdb.Get(ctx, prefix+"loads").Int(); n != 1 {
			t.Fatalf("loader ran %d times across %d processes, want 1\n%s", n, procs, strings.Join(outs, "\n"))
		}
		for i, out := range outs {
			if !strings.Contains(out, "readers-ok=20") {
				t.Fatalf("child %d did not report all readers ok:\n%s", i, out)
			}
		}
	})
}

// The stampede's lease, and the extensions its loader waits for: 4 × 0.5 s
// outlasts the 1.5 s lease.
const (
	stampedeLease      = 1500 * time.Millisecond
	stampedeExtensions = 4
)

func stampedeChild(t *testing.T) {
	rdb := redistest.FromSpec(t, os.Getenv("CG_ADDRS"), nil)
	prefix := os.Getenv("CG_PREFIX")
	var procs int
	fmt.Sscan(os.Getenv("CG_PROCS"), &procs)
	ctx := context.Background()
	c, err := New(rdb, Values[string]{}, WithPrefix(prefix+"v:"), WithFillLease(stampedeLease), WithWait(40*time.Second), withHooks(&hooks{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var reported atomic.Bool
	var extended atomic.Int64 // the holder's successful extensions
	c.hooks().OnExtend = func(_ string, ok bool, _ error) {
		if ok {
			extended.Add(1)
		}
	}
	c.hooks().OnLeaseWait = func(string) {
		if reported.CompareAndSwap(false, true) {
			rdb.Incr(ctx, prefix+"waiters")
		}
	}
	load := func(ctx context.Context, key string) (string, error) {
		rdb.Incr(ctx, prefix+"loads")
		deadline := time.Now().Add(30 * time.Second)
		for {
			if n, _ := rdb.Get(ctx, prefix+"waiters").Int(); n >= procs-1 && extended.Load() >= stampedeExtensions {
				return "value of " + key, nil
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("other processes never waited, or the lease was not extended (%d)", extended.Load())
			}
			time.Sleep(5 * time.Millisecond) // polling a condition, not ordering
		}
	}
	const readers = 20
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(ctx, "hot", load)
			if err == nil && v == "value of hot" {
				ok.Add(1)
			} else {
				t.Errorf("Get = %q, %v", v, err)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("readers-ok=%d\n", ok.Load())
}

// A holder that died leaves a placeholder; a waiter takes the lease over once
// it expires and loads.
func TestDeadHolderLeaseIsTakenOver(t *testing.T) {
	redistest.NeedServer(t)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithWait(10*time.Second))
		dead := wire.Placeholder([16]byte{9})
		rdb.Set(ctx, prefixFor(t)+"k", dead, 100*time.Millisecond)
		l := &countingLoader[string]{rows: map[string]string{"k": "v"}}
		v, err := c.Get(ctx, "k", l.load)
		if err != nil || v != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		if l.calls.Load() != 1 || c.Stats().LeaseWaits != 1 {
			t.Fatalf("loads %d, stats %+v", l.calls.Load(), c.Stats())
		}
	})
}

// A lease held elsewhere past the wait budget: ErrWaitTimeout and no load, or
// with WithLoadOnWaitTimeout a direct load that is not cached.
func TestWaitTimeout(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		other := wire.Placeholder([16]byte{7})
		rdb.Set(ctx, prefixFor(t)+"k", other, time.Minute)
		l := &countingLoader[string]{rows: map[string]string{"k": "v"}}

		c := newCache[string](t, rdb, WithWait(30*time.Millisecond))
		if _, err := c.Get(ctx, "k", l.load); !errors.Is(err, ErrWaitTimeout) {
			t.Fatalf("err = %v, want ErrWaitTimeout", err)
		}
		if l.calls.Load() != 0 {
			t.Fatal("loader ran although the database was to be protected")
		}

		d := newCache[string](t, rdb, WithPrefix(prefixFor(t)), WithWait(0), WithLoadOnWaitTimeout())
		if v, err := d.Get(ctx, "k", l.load); err != nil || v != "v" {
			t.Fatalf("direct load: %q, %v", v, err)
		}
		// The waiters marked it as waited for (notify.go): still its lease.
		if got := rdb.Get(ctx, prefixFor(t)+"k").Val(); got != other && got != other+string(rune(wire.WaitMark)) {
			t.Fatal("direct load overwrote another holder's lease")
		}
	})
}

// A loader slower than its lease keeps the lease by extending it, and its
// fill lands.
func TestSlowLoaderExtendsLease(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		if redistest.ServerPath() == "" {
			t.Skip("a short lease needs a real server: miniredis runs each extension in a fresh Lua VM and, under -race, lets the lease lapse first")
		}
		ctx := context.Background()
		c := newCache[string](t, rdb, WithFillLease(300*time.Millisecond))
		extended := make(chan bool, 16)
		c.hooks().OnExtend = func(_ string, ok bool, err error) {
			if err != nil {
				return // no answer in time: retried, the lease is not lost
			}
			select {
			case extended <- ok:
			default:
			}
		}
		v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
			for i := 0; i < 5; i++ { // five extensions: longer than the lease
				if !<-extended {
					// Waiting for more would hang: the lease is gone.
					return "", errors.New("an extension failed: the lease lapsed first (an overloaded machine?)")
				}
			}
			return "v", nil
		})
		if err != nil || v != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		if st := c.Stats(); st.RejectedFills != 0 {
			t.Fatalf("fill rejected after extensions: %+v", st)
		}
		if got, _ := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "again", nil }); got != "v" {
			t.Fatalf("value not cached: %q", got)
		}
	})
}

// A caller that gives up returns at once; the shared load goes on for the
// others, and Close cancels it and waits for it.
func TestCallerCancelAndClose(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	entered := make(chan struct{})
	loaderDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.Get(ctx, "k", func(lctx context.Context, _ string) (string, error) {
			close(entered)
			<-lctx.Done()
			loaderDone <- lctx.Err()
			return "", lctx.Err()
		})
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get err = %v, want context.Canceled", err)
	}
	select {
	case <-loaderDone:
		t.Fatal("the shared load was cancelled with its first caller")
	default:
	}
	c.Close()
	select {
	case err := <-loaderDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("loader ctx err = %v", err)
		}
	default:
		t.Fatal("Close returned before the load it cancelled finished")
	}
}
