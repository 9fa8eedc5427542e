package bloom

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A Redis filter works for a Redis user granted exactly the lines of
// docs/acl.md, on a single node and a cluster: nothing is refused to it.
func TestACLRedisFilter(t *testing.T) {
	vars := func(t *testing.T) map[string]string { return map[string]string{"bloom-name": redistest.Name(t)} }
	redistest.OnACL(t, false, []string{"bloom"}, vars, func(t *testing.T, rdb, _ redis.UniversalClient) {
		name := redistest.Name(t)
		ctx := context.Background()
		f, err := NewRedis(ctx, rdb, name, 1000, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(ctx, "a", "b"); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.MayContain(ctx, "a"); !ok || err != nil {
			t.Fatalf("MayContain(a): %v %v", ok, err)
		}
		if got, err := f.MayContainMany(ctx, []string{"a", "b"}); err != nil || !got[0] || !got[1] {
			t.Fatalf("MayContainMany: %v %v", got, err)
		}
		if _, err := f.FillRatio(ctx); err != nil {
			t.Fatal(err)
		}
		src := func(yield func(string, error) bool) { yield("c", nil) }
		if err := f.Rebuild(ctx, src); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.MayContain(ctx, "c"); !ok || err != nil {
			t.Fatalf("after Rebuild, MayContain(c): %v %v", ok, err)
		}
		if err := f.Drop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A fleet filter works for a user granted exactly the bloom and bloom-fleet
// lines of docs/acl.md: a key added through one instance is found by
// another, and a key never added is refused.
func TestACLFleet(t *testing.T) {
	vars := func(t *testing.T) map[string]string { return map[string]string{"bloom-name": redistest.Name(t)} }
	redistest.OnACL(t, false, []string{"bloom", "bloom-fleet"}, vars, func(t *testing.T, rdb, _ redis.UniversalClient) {
		name := redistest.Name(t)
		ctx := t.Context()
		open := func() *Fleet {
			f, err := NewFleet(ctx, rdb, name, 1000, 0.01, WithHealthCheck(fleetInterval, fleetTimeout), WithLogger(quietLog))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}
		a, b := open(), open()
		mustRebuild(t, a, []string{"x"})
		for _, f := range []*Fleet{a, b} {
			if err := f.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Add(ctx, "y"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fleetBound, "b finds y", func() bool { ok, _ := b.MayContain(ctx, "y"); return ok })
		// The rebuild's message may put b through a reread (safe mode for
		// its duration) after WaitReady returned: wait for it to vouch.
		waitFor(t, 10*time.Second, "b refuses a key never added", func() bool { ok, _ := b.MayContain(ctx, "never-added"); return !ok })
	})
}

// Without the channel lines the filter cannot vouch for anything: it stays
// in safe mode and never answers "absent", even for a key never added.
func TestACLFleetWithoutChannels(t *testing.T) {
	redistest.NeedServer(t)
	for _, top := range redistest.ACLTopologies(false) {
		t.Run(top.Name, func(t *testing.T) {
			admin := top.New(t)
			name := redistest.Name(t)
			blocks := []string{"connection", "bloom", "bloom-fleet"}
			if top.Name == "cluster" {
				blocks = append(blocks, "cluster")
			}
			rdb := redistest.ACLClientRefused(t, admin, map[string]string{"bloom-name": name}, blocks...)
			ctx := t.Context()
			f, err := NewFleet(ctx, rdb, name, 1000, 0.01, WithHealthCheck(fleetInterval, fleetTimeout), WithLogger(quietLog))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			time.Sleep(3 * fleetBound)
			if ok, _ := f.MayContain(ctx, "never-added"); !ok || f.Stats().SafeMode != 1 {
				t.Fatalf("without channel rights: MayContain(never-added) = %v, stats %+v; want maybe, in safe mode", ok, f.Stats())
			}
		})
	}
}
