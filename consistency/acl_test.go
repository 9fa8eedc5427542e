package consistency

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The delayed double delete (Update: first delete, write, the queued second
// delete run by the worker) works for a Redis user granted exactly the lines
// of docs/acl.md for the queue and the cache it invalidates, on a single
// node and a cluster: the second delete lands, and nothing is refused.
func TestACLDelayedDoubleDelete(t *testing.T) {
	vars := func(t *testing.T) map[string]string {
		return map[string]string{"prefix": prefixFor(t) + "c:", "queue-prefix": prefixFor(t) + "q"}
	}
	redistest.OnACL(t, true, []string{"consistency", "cache"}, vars, func(t *testing.T, rdb, admin redis.UniversalClient) {
		ctx := context.Background()
		var errs []error
		q := newQueue(t, rdb, WithDelay(50*time.Millisecond), WithPollInterval(50*time.Millisecond), WithShards(2),
			WithErrorHandler(func(err error) { errs = append(errs, err) }))
		c := newCache[string](t, rdb)
		users := register(t, q, "users", c)
		if err := users.Update(ctx, []string{"1"}, func(ctx context.Context) error {
			// A reader fills the old row between the two deletes.
			return c.Set(ctx, "1", "stale")
		}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			v, err := c.Get(ctx, "1", func(context.Context, string) (string, error) { return "fresh", nil })
			if err != nil {
				t.Fatal(err)
			}
			if v == "fresh" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the second delete never landed: %q", v)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n, err := q.Pending(ctx); err != nil || n != 0 {
			t.Fatalf("pending %d %v", n, err)
		}
		if st := q.Stats(); st.RedisErrors != 0 {
			t.Fatalf("stats %+v, errors %v", st, errs)
		}
	})
}
