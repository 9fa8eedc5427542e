package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/cacheguard/cacheguard/lock"
)

// inspect reads every shape the writers leave under a key: the four
// placeholder shapes, version tombstones, entries under refresh, locks whose
// name carries its own hash tag and the retry queue's shards.
func TestInspectKnowsEveryShape(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.New(t)
			ctx := context.Background()
			c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("s:"), cache.WithTTL(time.Hour))
			must(t, err)
			defer c.Close()

			// Stranded placeholders of every shape (no expiry).
			var tok [wire.TokenSize]byte
			base := wire.Placeholder(tok)
			ver := "\x00\x00\x00\x00\x00\x00\x00\x05"
			phs := map[string]string{
				"s:ph":            base,
				"s:ph-marked":     base + string(rune(wire.WaitMark)),
				"s:ph-kept":       base + ver,
				"s:ph-kept-mark":  base + ver + string(rune(wire.WaitMark)),
				"s:ph-kept-mark2": base + ver + string(rune(wire.WaitMark)),
			}
			for k, v := range phs {
				must(t, rdb.Set(ctx, k, v, 0).Err())
			}
			must(t, rdb.Persist(ctx, "s:ph-kept-mark2").Err())
			must(t, rdb.PExpire(ctx, "s:ph-kept-mark2", 20*time.Second).Err()) // in flight

			// Version tombstones, through the cache.
			for i := range 3 {
				k := fmt.Sprint("t", i)
				_, err := c.SetVersioned(ctx, k, "v", 7)
				must(t, err)
				must(t, c.DeleteKeepingVersion(ctx, time.Hour, k))
			}
			// An entry an early refresh has claimed.
			env := wire.AppendEnvelope(nil, wire.FlagRefreshing, 0, time.Now().Add(time.Hour), time.Millisecond, []byte(`"v"`))
			must(t, rdb.Set(ctx, "s:refreshing", env, time.Hour).Err())

			// A lock named with its own hash tag.
			lc, err := lock.New(rdb)
			must(t, err)
			defer lc.Close()
			h, err := lc.Mutex("orders:{42}:lock").Lock(ctx)
			must(t, err)
			defer h.Unlock(context.Background())
			// A released lock (its token kept) is no lock held; a lock of
			// the hash layout earlier versions wrote still is one.
			hr, err := lc.Mutex("released").Lock(ctx)
			must(t, err)
			must(t, hr.Unlock(ctx))
			must(t, rdb.HSet(ctx, lock.DefaultPrefix+"{legacy}", wire.LockFieldOwner, "o", wire.LockFieldHolds, 1, wire.LockFieldToken, 7).Err())
			must(t, rdb.PExpire(ctx, lock.DefaultPrefix+"{legacy}", time.Hour).Err())

			// A sharded retry queue.
			q, err := consistency.New(rdb, consistency.WithPrefix("sq"), consistency.WithShards(4))
			must(t, err)
			defer q.Close()
			tg, err := q.Register("users", c)
			must(t, err)
			for i := range 40 {
				must(t, tg.InvalidateAfter(ctx, time.Hour, fmt.Sprint("id", i)))
			}

			var out, errOut bytes.Buffer
			if code := run(ctx, []string{"inspect", "-addr", addrOf(t, rdb), "-json"}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			var r Report
			must(t, json.Unmarshal(out.Bytes(), &r))

			stranded := map[string]bool{}
			for _, s := range r.Leases.Stranded {
				stranded[s.Key] = true
			}
			for k := range phs {
				if k != "s:ph-kept-mark2" && !stranded[k] {
					t.Errorf("placeholder %q (%d bytes) not reported stranded: %+v", k, len(phs[k]), r.Leases.Stranded)
				}
			}
			if len(r.Leases.Stranded) != 4 || r.Leases.InFlight != 1 {
				t.Errorf("leases %+v: want 4 stranded and 1 in flight", r.Leases)
			}
			if r.Entries.Tombstones != 3 {
				t.Errorf("version tombstones %d, want 3", r.Entries.Tombstones)
			}
			if r.Entries.Refreshing != 1 {
				t.Errorf("entries under refresh %d, want 1", r.Entries.Refreshing)
			}
			locks := map[string]Lock{}
			for _, l := range r.Locks {
				locks[l.Key] = l
			}
			if l := locks[lock.DefaultPrefix+"orders:{42}:lock"]; len(r.Locks) != 2 || l.Holds != 1 || l.Token != fmt.Sprint(h.Token()) || l.Kind != wire.LockMutex {
				t.Errorf("locks %+v, want orders:{42}:lock held with token %d", r.Locks, h.Token())
			}
			if l := locks[lock.DefaultPrefix+"{legacy}"]; l.Holds != 1 || l.Token != "7" || l.Owner != "o" {
				t.Errorf("locks %+v, want {legacy} (hash layout) held", r.Locks)
			}
			var depth int64
			shards := map[int]bool{}
			for _, q := range r.Queues {
				if q.Prefix != "sq" || q.Target != "users" {
					t.Errorf("queue %+v: want prefix sq, target users", q)
				}
				depth += q.Depth
				shards[q.Shard] = true
			}
			if depth != 40 || len(shards) < 2 {
				t.Errorf("queues %+v: want 40 entries over several shards of sq", r.Queues)
			}

			out.Reset()
			if code := run(ctx, []string{"inspect", "-addr", addrOf(t, rdb)}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			for _, want := range []string{"version tombstones", "orders:{42}:lock", "{sq}"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
