package stock

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// dropHMGets is a go-redis hook that drops every HMGET from pipelines.
type dropHMGets struct{}

func (dropHMGets) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (dropHMGets) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (dropHMGets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds = slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool { return cmd.Name() == "hmget" }); len(cmds) == 0 {
			return nil // go-redis cannot send an empty pipeline
		}
		return next(ctx, cmds)
	}
}

// A bucket read a go-redis hook drops from a pipeline fails the call with
// pipe.ErrNoReply: Status indexed the missing reply (a panic), and the
// count of units moving between buckets read it as none.
func TestBucketReadsDroppedByAHookFail(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		inv := newInv(t, rdb, WithBuckets(4))
		load(t, inv, "sku", 100)
		rdb.AddHook(dropHMGets{})
		ctx := context.Background()
		if _, err := inv.Status(ctx, "sku"); !errors.Is(err, pipe.ErrNoReply) {
			t.Errorf("Status with its reads dropped = %v; want pipe.ErrNoReply", err)
		}
		if n, err := inv.inFlight(ctx, "sku"); !errors.Is(err, pipe.ErrNoReply) {
			t.Errorf("inFlight with its reads dropped = %d, %v; want pipe.ErrNoReply", n, err)
		}
	})
}
