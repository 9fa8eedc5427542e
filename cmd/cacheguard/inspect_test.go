package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/lock"
	"github.com/redis/go-redis/v9"
)

// plant writes, through the packages that own the formats, what an operator
// must be told about: a big key, 300 cache entries that all expire in the
// same second, a stranded lease placeholder, a pending retry-queue entry, a
// Bloom filter and a held lock. It also writes foreign keys of every type
// that must be left alone without error.
func plant(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("user:"), cache.WithTTL(time.Hour), cache.WithJitter(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Entries in the writer's format, then one expiry for all of them (as a
	// fill of many keys at once without jitter gives), independent of how
	// long the writes took on a slow machine.
	at := time.Now().Add(time.Hour)
	for i := 0; i < 300; i++ {
		if err := c.Set(ctx, fmt.Sprint(i), "v"); err != nil {
			t.Fatal(err)
		}
		must(t, rdb.PExpireAt(ctx, fmt.Sprint("user:", i), at).Err())
	}
	// The lease placeholder format (internal/wire) left without expiry,
	// as a server restored from a snapshot or a hand-made PERSIST leaves it.
	stranded := "\xfel" + strings.Repeat("\x01", 16)
	must(t, rdb.Set(ctx, "user:stranded", stranded, 0).Err())
	must(t, rdb.Set(ctx, "user:inflight", "\xfel"+strings.Repeat("\x02", 16), 50*time.Second).Err()) // under -max-lease
	must(t, rdb.Set(ctx, "blob", strings.Repeat("x", 2<<20), 0).Err())

	// Foreign data of every shape, including strings that start like ours.
	must(t, rdb.Set(ctx, "foreign:short", "\xfe", 0).Err())
	must(t, rdb.Set(ctx, "foreign:badenv", "\xfec\x09garbage", 0).Err())
	must(t, rdb.Set(ctx, "{x}:cfg", "m=zero k=? ready=1", 0).Err())
	must(t, rdb.HSet(ctx, "foreign{h}", "owner", 7).Err())
	must(t, rdb.ZAdd(ctx, "{q}:due:", redis.Z{Score: 1, Member: "a"}).Err())
	must(t, rdb.LPush(ctx, "{q}:dead", "x").Err())
	must(t, rdb.SAdd(ctx, "a-set", "m").Err())

	f, err := bloom.NewRedis(ctx, rdb, "users", 1000, 0.01)
	must(t, err)
	must(t, f.Add(ctx, "a", "b", "c"))

	q, err := consistency.New(rdb, consistency.WithPrefix("wq"))
	must(t, err)
	defer q.Close()
	tg, err := q.Register("users", c)
	must(t, err)
	must(t, tg.InvalidateAfter(ctx, time.Hour, "42"))

	lc, err := lock.New(rdb)
	must(t, err)
	defer lc.Close()
	h, err := lc.Mutex("orders").Lock(ctx)
	must(t, err)
	t.Cleanup(func() { h.Unlock(context.Background()) })
	hu, err := lc.Mutex("carts", lock.WithoutFencing()).Lock(ctx)
	must(t, err)
	t.Cleanup(func() { hu.Unlock(context.Background()) })

	// binlog Sources' positions (RedisPositions, in the orders cjson may
	// write their fields): one tailed, one whose tailer's lease ran out,
	// one saved without a lease; and JSON of another program.
	soon, past := time.Now().Add(time.Hour).UnixMilli(), time.Now().Add(-time.Minute).UnixMilli()
	must(t, rdb.Set(ctx, "svc:binlog:tailed", fmt.Sprintf(`{"until":%d,"file":"bin.000042","tailer":"ab12","offset":1234}`, soon), 0).Err())
	must(t, rdb.Set(ctx, "svc:binlog:stale", fmt.Sprintf(`{"tailer":"cd34","until":%d}`, past), 0).Err())
	must(t, rdb.Set(ctx, "svc:binlog:saved", `{"file":"bin.000007","offset":4}`, 0).Err())
	must(t, rdb.Set(ctx, "foreign:json", `{"file":"","owner":"someone else"}`, 0).Err())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestInspectReportsPlantedTrouble(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.New(t)
			plant(t, rdb)
			addr := addrOf(t, rdb)

			var out, errOut bytes.Buffer
			if code := run(context.Background(), []string{"inspect", "-addr", addr, "-json", "-count", "7"}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			var r Report
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if len(r.Biggest) == 0 || r.Biggest[0].Key != "blob" || r.Biggest[0].Bytes < 2<<20 {
				t.Errorf("biggest keys %+v, want blob (2 MiB) first", r.Biggest)
			}
			if r.Entries.Count < 300 || r.Entries.BusiestSecondKeys < 300 {
				t.Errorf("entries %d, busiest second %d: want the 300 synchronized entries", r.Entries.Count, r.Entries.BusiestSecondKeys)
			}
			if !hasWarning(r, "avalanche risk: 30") || !hasWarning(r, "stranded lease") || !hasWarning(r, `big key "blob"`) {
				t.Errorf("warnings %q: want avalanche, stranded lease and big key", r.Warnings)
			}
			if len(r.Leases.Stranded) != 1 || r.Leases.Stranded[0].Key != "user:stranded" || r.Leases.Stranded[0].TTLms != -1 {
				t.Errorf("stranded %+v, want user:stranded without expiry", r.Leases.Stranded)
			}
			if r.Leases.InFlight != 1 {
				t.Errorf("in-flight leases %d, want 1", r.Leases.InFlight)
			}
			if len(r.Queues) != 1 || r.Queues[0].Prefix != "wq" || r.Queues[0].Target != "users" || r.Queues[0].Depth != 1 || r.Queues[0].Due != 0 {
				t.Errorf("queues %+v, want wq/users with one pending entry, none due", r.Queues)
			}
			if len(r.Blooms) != 1 || r.Blooms[0].Name != "users" || r.Blooms[0].BitsSet == 0 || r.Blooms[0].FillRatio <= 0 {
				t.Errorf("blooms %+v, want users with some bits set", r.Blooms)
			}
			if !hasLock(r, "orders") || !hasLock(r, "carts") || len(r.Locks) != 2 {
				t.Errorf("locks %+v, want orders and carts (unfenced) held (and no foreign hash)", r.Locks)
			}
			if b := binlogRows(r); len(r.Binlogs) != 3 || b["svc:binlog:tailed"].Tailer != "ab12" || b["svc:binlog:tailed"].LeaseMS < 50*60*1000 ||
				b["svc:binlog:tailed"].File != "bin.000042" || b["svc:binlog:tailed"].Offset != 1234 ||
				b["svc:binlog:stale"].LeaseMS > 0 || b["svc:binlog:stale"].File != "" || b["svc:binlog:saved"].Tailer != "" {
				t.Errorf("binlogs %+v, want the tailed, the stale and the saved position (and no foreign JSON)", r.Binlogs)
			}
			if len(r.DeadLetters) != 0 || len(r.Errors) != 0 {
				t.Errorf("dead letters %+v, errors %q: want none (the planted list is foreign)", r.DeadLetters, r.Errors)
			}

			// The human-readable report says the same things.
			out.Reset()
			if code := run(context.Background(), []string{"inspect", "-addr", addr}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			for _, want := range []string{"avalanche risk", `"user:stranded"`, `"blob"`, "Bloom filters", "{wq} users", "locks held",
				"binlog sources", "tailer ab12, lease", "lease ran out", "no tailer"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestInspectBoundsTheScan(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		must(t, rdb.Set(ctx, fmt.Sprintf("bound:%d", i), "v", 0).Err())
	}
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"inspect", "-addr", addrOf(t, rdb), "-json", "-max-keys", "10", "-count", "3"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r Report
	must(t, json.Unmarshal(out.Bytes(), &r))
	if r.Scanned != 10 || !r.Truncated {
		t.Fatalf("scanned %d keys (truncated %v), want exactly 10 and truncated", r.Scanned, r.Truncated)
	}
}

func TestInspectRejectsBadUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"nonsense"},
		{"inspect"},
		{"inspect", "-addr", "127.0.0.1:1", "-max-keys", "0"},
		{"inspect", "-addr", "127.0.0.1:1", "extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"inspect", "-addr", "127.0.0.1:1", "-timeout", "2s"}, &out, &errOut); code != 1 {
		t.Errorf("unreachable server: exit %d, want 1 (%s)", code, errOut.String())
	}
}

func hasWarning(r Report, s string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

func hasLock(r Report, name string) bool {
	for _, l := range r.Locks {
		if strings.Contains(l.Key, "{"+name+"}") && l.Owner != "" && l.Holds == 1 {
			return true
		}
	}
	return false
}

func addrOf(t *testing.T, rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	t.Fatalf("unexpected client %T", rdb)
	return ""
}

// binlogRows maps the report's binlog rows by key.
func binlogRows(r Report) map[string]Binlog {
	m := map[string]Binlog{}
	for _, b := range r.Binlogs {
		m[b.Key] = b
	}
	return m
}
