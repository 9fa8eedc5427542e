package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// inspectReport is the part of `cacheguard inspect -json` this test reads.
type inspectReport struct {
	Scanned int64 `json:"scanned"`
	Biggest []struct {
		Key   string `json:"key"`
		Bytes int64  `json:"bytes"`
	} `json:"biggest"`
	Entries struct {
		Count             int64 `json:"count"`
		BusiestSecondKeys int64 `json:"busiest_second_keys"`
	} `json:"entries"`
	Leases struct {
		Stranded []struct {
			Key   string `json:"key"`
			TTLms int64  `json:"ttl_ms"`
		} `json:"stranded"`
	} `json:"leases"`
	Warnings []string `json:"warnings"`
	Errors   []string `json:"errors"`
}

// TestInspectOnTheStormsRedis runs the operator's command against the Redis
// the demo leaves behind: first as the demo leaves it, where cacheguard's
// jittered entries must not raise the avalanche warning, then with what an
// operator must be told about planted in the demo's own key space: a big
// cache entry, entries filled without jitter that expire in the same
// second, and a lease placeholder stranded without an expiry (a real
// placeholder, copied while a fill held it).
func TestInspectOnTheStormsRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/cacheguard and runs a storm")
	}
	srv, rdb := redistest.RealSingle(t) // MEMORY USAGE, OBJECT and a real keyspace walk
	bin := buildInspect(t)
	ctx := context.Background()

	e, err := newEnv(ctx, shortConfig(), rdb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The zipfian storm fills every key through each cache, then reads.
	if _, err := runScenario(ctx, e, zipfian()); err != nil {
		t.Fatal(err)
	}

	before := inspectJSON(t, bin, srv.Addr)
	if before.Entries.Count < int64(2*e.cfg.Keys) {
		t.Fatalf("inspect found %d cache entries, want the %d the two cacheguard runs filled", before.Entries.Count, 2*e.cfg.Keys)
	}
	if hasWarn(before.Warnings, "avalanche") || hasWarn(before.Warnings, "stranded") || hasWarn(before.Warnings, "big key") {
		t.Fatalf("warnings on the demo's own keys (jittered, no leases left, small): %q", before.Warnings)
	}

	prefix := fmt.Sprintf("storm:%s:planted:", e.runID)
	plantSynchronizedExpiry(t, rdb, prefix+"sync:", 200)
	big := plantBigEntry(t, rdb, prefix+"big:")
	stranded := plantStrandedLease(t, rdb, prefix+"lease:")

	after := inspectJSON(t, bin, srv.Addr)
	if len(after.Biggest) == 0 || after.Biggest[0].Key != big || after.Biggest[0].Bytes < 2<<20 {
		t.Errorf("biggest keys %+v, want %s (over 2 MiB) first", after.Biggest, big)
	}
	if after.Entries.BusiestSecondKeys < 200 {
		t.Errorf("busiest second holds %d expiries, want the 200 synchronized entries", after.Entries.BusiestSecondKeys)
	}
	if len(after.Leases.Stranded) != 1 || after.Leases.Stranded[0].Key != stranded || after.Leases.Stranded[0].TTLms != -1 {
		t.Errorf("stranded leases %+v, want %s without expiry", after.Leases.Stranded, stranded)
	}
	for _, want := range []string{"avalanche risk: 2", "1 stranded lease", fmt.Sprintf("big key %q", big)} {
		if !hasWarn(after.Warnings, want) {
			t.Errorf("warnings %q lack %q", after.Warnings, want)
		}
	}
	if len(after.Errors) != 0 {
		t.Errorf("inspect could not read: %q", after.Errors)
	}

	// The human-readable report says the same.
	human := runInspect(t, bin, srv.Addr)
	for _, want := range []string{"avalanche risk", fmt.Sprintf("%q", stranded), fmt.Sprintf("%q", big)} {
		if !strings.Contains(human, want) {
			t.Errorf("report lacks %q:\n%s", want, human)
		}
	}
}

// buildInspect builds cmd/cacheguard once, as `go run` would.
func buildInspect(t *testing.T) string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "cacheguard")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/cacheguard")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cacheguard: %v\n%s", err, out)
	}
	return bin
}

func runInspect(t *testing.T, bin, addr string, extra ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"inspect", "-addr", addr, "-progress=false"}, extra...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cacheguard inspect: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

func inspectJSON(t *testing.T, bin, addr string) inspectReport {
	t.Helper()
	out := runInspect(t, bin, addr, "-json")
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// plantSynchronizedExpiry fills n entries through a cacheguard cache
// without jitter, then gives them one expiry instant, as a batch fill
// would on a machine fast enough to write them all in one second.
func plantSynchronizedExpiry(t *testing.T, rdb redis.UniversalClient, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := cache.New(rdb, cache.Values[Item]{}, cache.WithPrefix(prefix), cache.WithTTL(time.Hour), cache.WithJitter(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	at := time.Now().Add(time.Hour)
	for i := 1; i <= n; i++ {
		if err := c.Set(ctx, itemKey(int64(i)), Item{ID: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if err := rdb.PExpireAt(ctx, prefix+itemKey(int64(i)), at).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// plantBigEntry stores a 2 MiB value through a cache that allows it and
// returns its key.
func plantBigEntry(t *testing.T, rdb redis.UniversalClient, prefix string) string {
	t.Helper()
	c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix(prefix), cache.WithMaxValueSize(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(context.Background(), "catalogue", strings.Repeat("x", 2<<20)); err != nil {
		t.Fatal(err)
	}
	return prefix + "catalogue"
}

// plantStrandedLease copies the placeholder a fill holds while its loader
// runs to another key, without an expiry, as a snapshot taken mid-fill and
// restored (or a PERSIST by hand) leaves it, and returns that key.
func plantStrandedLease(t *testing.T, rdb redis.UniversalClient, prefix string) string {
	t.Helper()
	ctx := context.Background()
	c, err := cache.New(rdb, cache.Values[Item]{}, cache.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, "7", func(ctx context.Context, key string) (Item, error) {
			close(started)
			<-release
			return Item{ID: 7}, nil
		})
		done <- err
	}()
	<-started // the loader runs, so the lease is in Redis
	placeholder, err := rdb.Get(ctx, prefix+"7").Bytes()
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && !errors.Is(err, cache.ErrNotFound) {
		t.Fatal(err)
	}
	key := prefix + "stranded"
	if err := rdb.Set(ctx, key, placeholder, 0).Err(); err != nil {
		t.Fatal(err)
	}
	return key
}

func hasWarn(warnings []string, s string) bool {
	for _, w := range warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
