package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// pipelineNames records the names of the commands sent in pipelines, and
// of those sent plain on a key under prefix (when set).
type pipelineNames struct {
	mu     sync.Mutex
	count  map[string]int
	prefix string
	plain  map[string]int
}

func (h *pipelineNames) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pipelineNames) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.prefix != "" && strings.Contains(fmt.Sprint(cmd.Args()), h.prefix) {
			h.mu.Lock()
			h.plain[cmd.Name()]++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (h *pipelineNames) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		for _, c := range cmds {
			h.count[c.Name()]++
		}
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the pipelines' counts since the last take, takePlain the
// plain commands' since the last takePlain.
func (h *pipelineNames) take() map[string]int      { return h.swap(&h.count) }
func (h *pipelineNames) takePlain() map[string]int { return h.swap(&h.plain) }

func (h *pipelineNames) swap(m *map[string]int) map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := *m
	*m = map[string]int{}
	return out
}

func flushScripts(t *testing.T, ctx context.Context, rdb redis.UniversalClient) {
	t.Helper()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.ScriptFlush(ctx).Err()
		})
	} else {
		err = rdb.ScriptFlush(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Pipelined scripts go by SHA; after SCRIPT FLUSH the calls answered
// NOSCRIPT are sent again with the body and the batch still fills.
func TestPipelinedScriptsUseEvalSha(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hook := &pipelineNames{count: map[string]int{}}
		rdb.AddHook(hook)
		c := newCache[user](t, rdb)
		loads := 0
		load := func(_ context.Context, keys []string) (map[string]user, error) {
			loads++
			out := map[string]user{}
			for _, k := range keys {
				out[k] = user{len(k), k}
			}
			return out, nil
		}
		batch := func(round int) {
			t.Helper()
			keys := make([]string, 6)
			for i := range keys {
				keys[i] = fmt.Sprintf("r%d-%d", round, i)
			}
			got, err := c.GetMany(ctx, keys, load)
			if err != nil || len(got) != len(keys) {
				t.Fatalf("round %d: %v, %v", round, got, err)
			}
			// Cached: a second read does not load.
			before := loads
			if _, err := c.GetMany(ctx, keys, load); err != nil || loads != before {
				t.Fatalf("round %d: not cached (err %v, loads %d -> %d)", round, err, before, loads)
			}
		}
		flushScripts(t, ctx, rdb)
		hook.take()
		batch(1)
		first := hook.take()
		if first["evalsha"] == 0 {
			t.Fatalf("pipelines sent %v; want evalsha", first)
		}
		batch(2)
		second := hook.take()
		if second["evalsha"] == 0 || second["eval"] != 0 {
			t.Fatalf("pipelines with the scripts loaded sent %v; want evalsha only", second)
		}
	})
}

// A lone script call goes out plain by SHA (a Set, a Get's fill); after
// SCRIPT FLUSH it is answered NOSCRIPT and sent again, once, as a plain
// EVAL: the write lands and the fill is cached.
func TestLoneScriptsSurviveScriptFlush(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hook := &pipelineNames{count: map[string]int{}, prefix: prefixFor(t), plain: map[string]int{}}
		rdb.AddHook(hook)
		c := newCache[string](t, rdb)
		sent := func(what string) {
			t.Helper()
			if got := hook.takePlain(); got["evalsha"] != 1 || got["eval"] != 1 {
				t.Errorf("%s after SCRIPT FLUSH sent %v plain; want one evalsha and one eval", what, got)
			}
		}
		flushScripts(t, ctx, rdb)
		hook.takePlain()
		if err := c.Set(ctx, "set", "v"); err != nil {
			t.Fatal(err)
		}
		sent("Set")
		if v, err := c.Get(ctx, "set", noLoad); err != nil || v != "v" {
			t.Fatalf("Get after the Set = %q, %v", v, err)
		}
		flushScripts(t, ctx, rdb)
		hook.takePlain()
		loads := 0
		load := func(context.Context, string) (string, error) { loads++; return "loaded", nil }
		if v, err := c.Get(ctx, "fill", load); err != nil || v != "loaded" {
			t.Fatalf("Get = %q, %v", v, err)
		}
		sent("a Get's fill")
		if v, err := c.Get(ctx, "fill", load); err != nil || v != "loaded" || loads != 1 {
			t.Fatalf("Get after the fill = %q, %v after %d loads; want the filled value, one load", v, err, loads)
		}
	})
}
