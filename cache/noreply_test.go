package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// A go-redis hook that drops a GET from GetMany's pipeline fails that key
// with pipe.ErrNoReply; the other keys are read, and nothing is loaded or
// counted corrupt for the dropped one.
func TestGetManyGetDroppedByAHookFails(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		ctx := context.Background()
		keys := setOneSlot(t, c)
		dropped := keys[1]
		rdb.AddHook(onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			return next(ctx, slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool {
				return cmd.Name() == "get" && cmd.Args()[1] == c.keys.Key(dropped)
			}))
		}))
		var loaded []string
		got, err := c.GetMany(ctx, keys, func(_ context.Context, ks []string) (map[string]string, error) {
			loaded = append(loaded, ks...)
			return nil, nil
		})
		var be *BatchError
		if !errors.As(err, &be) || !slices.Equal(be.Keys(), []string{dropped}) || !errors.Is(be.Err(dropped), pipe.ErrNoReply) {
			t.Fatalf("GetMany = %v, %v; want %s failed with pipe.ErrNoReply", got, err, dropped)
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

// dropFromPipelines is a go-redis hook that drops from every pipeline the
// commands drop chooses, and sends the rest.
type dropFromPipelines func(cmd redis.Cmder) bool

func (h dropFromPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h dropFromPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h dropFromPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return next(ctx, slices.DeleteFunc(slices.Clone(cmds), h))
	}
}

// A Delete of several keys whose UNLINK of one key a hook drops fails
// with pipe.ErrNoReply: that entry is still there, and the caller must not
// be told it was deleted.
func TestDeleteOfAKeyDroppedByAHookFails(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		ctx := context.Background()
		keys := setOneSlot(t, c)
		dropped := c.keys.Key(keys[1])
		rdb.AddHook(dropFromPipelines(func(cmd redis.Cmder) bool {
			return cmd.Name() == "unlink" && cmd.Args()[1] == dropped
		}))
		err := c.Delete(ctx, keys...)
		if !errors.Is(err, pipe.ErrNoReply) {
			t.Fatalf("Delete with an UNLINK dropped = %v; want pipe.ErrNoReply", err)
		}
		if n, err := rdb.Exists(ctx, dropped).Result(); err != nil || n != 1 {
			t.Fatalf("the dropped key's entry: EXISTS = %d, %v; want it still there", n, err)
		}
	})
}

// An invalidation message a go-redis hook drops from the pipeline of a
// write's messages is sent again, as a failed publish is: read as sent, it
// was lost, and the other instances kept the entries it named.
func TestInvalidationDroppedByAHookIsSentAgain(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := localCache(t, rdb)
	h := &dropFirstPublish{sent: map[string]int{}}
	rdb.AddHook(h)
	keys := make([]string, bus.MaxKeysPerInval+10) // two messages: one pipeline
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	if err := c.Delete(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped == "" || h.sent[h.dropped] != 1 {
		t.Fatalf("the dropped message was sent %d times after (a message dropped: %t)", h.sent[h.dropped], h.dropped != "")
	}
	if st := c.Stats(); st.InvalidationSendFailures != 0 {
		t.Fatalf("%d send failures", st.InvalidationSendFailures)
	}
}

// dropFirstPublish drops the first PUBLISH of a pipeline and counts the
// messages of those it lets through, plain or pipelined.
type dropFirstPublish struct {
	mu      sync.Mutex
	dropped string
	sent    map[string]int
}

func (h *dropFirstPublish) pass(cmd redis.Cmder, inPipeline bool) bool {
	if cmd.Name() != "publish" {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := fmt.Sprint(cmd.Args()[2])
	if h.dropped == "" && inPipeline {
		h.dropped = msg
		return false
	}
	h.sent[msg]++
	return true
}

func (h *dropFirstPublish) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *dropFirstPublish) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.pass(cmd, false)
		return next(ctx, cmd)
	}
}
func (h *dropFirstPublish) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return next(ctx, slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool { return !h.pass(cmd, true) }))
	}
}

// setOneSlot sets three keys of one slot, each to "v-" and its name, and
// returns them.
func setOneSlot(t *testing.T, c *Cache[string]) []string {
	t.Helper()
	keys := []string{"a{1}", "b{1}", "c{1}"}
	for _, k := range keys {
		if err := c.Set(context.Background(), k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
