package bloom

import (
	"context"
	"testing"

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
