package cache

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A go-redis hook that drops a GET from GetMany's pipeline fails that key
// with errNoReply; the other keys are read, and nothing is loaded or
// counted corrupt for the dropped one.
func TestGetManyGetDroppedByAHookFails(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		ctx := context.Background()
		keys := []string{"a{1}", "b{1}", "c{1}"}
		for _, k := range keys {
			if err := c.Set(ctx, k, "v-"+k); err != nil {
				t.Fatal(err)
			}
		}
		dropped := keys[1]
		rdb.AddHook(onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			return next(ctx, slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool {
				return cmd.Name() == "get" && cmd.Args()[1] == c.rkey(dropped)
			}))
		}))
		var loaded []string
		got, err := c.GetMany(ctx, keys, func(_ context.Context, ks []string) (map[string]string, error) {
			loaded = append(loaded, ks...)
			return nil, nil
		})
		var be *BatchError
		if !errors.As(err, &be) || !slices.Equal(be.Keys(), []string{dropped}) || !errors.Is(be.Err(dropped), errNoReply) {
			t.Fatalf("GetMany = %v, %v; want %s failed with errNoReply", got, err, dropped)
		}
		for _, k := range []string{keys[0], keys[2]} {
			if got[k] != "v-"+k {
				t.Errorf("GetMany[%s] = %q", k, got[k])
			}
		}
		if len(loaded) != 0 {
			t.Errorf("loaded %v for keys whose GET went unanswered", loaded)
		}
		if s := c.Stats(); s.Corrupt != 0 {
			t.Errorf("%d corrupt entries counted", s.Corrupt)
		}
	})
}
