package cache

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A GetMany that asks for a key a Get is loading joins that load: the key is
// loaded once, and the batch loader is called only for the other keys.
func TestGetAndGetManyLoadOnceGetFirst(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		joined := make(chan string, 4)
		c := newCache[string](t, rdb, withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
		loading, release := make(chan struct{}), make(chan struct{})
		var loads atomic.Int64
		got := make(chan string, 1)
		go func() {
			v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
				loads.Add(1)
				close(loading)
				<-release
				return "v", nil
			})
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		<-loading
		var batchKeys [][]string
		manyDone := make(chan map[string]string, 1)
		go func() {
			m, err := c.GetMany(ctx, []string{"k", "other"}, func(_ context.Context, ks []string) (map[string]string, error) {
				batchKeys = append(batchKeys, slices.Clone(ks))
				out := map[string]string{}
				for _, k := range ks {
					out[k] = "batch-" + k
				}
				return out, nil
			})
			if err != nil {
				t.Error(err)
			}
			manyDone <- m
		}()
		if k := <-joined; k != "k" {
			t.Fatalf("GetMany joined %q", k)
		}
		close(release)
		m := <-manyDone
		if v := <-got; v != "v" {
			t.Fatalf("Get got %q", v)
		}
		if m["k"] != "v" || m["other"] != "batch-other" {
			t.Fatalf("GetMany got %v", m)
		}
		if n := loads.Load(); n != 1 {
			t.Fatalf("Get's loader ran %d times", n)
		}
		if len(batchKeys) != 1 || !slices.Equal(batchKeys[0], []string{"other"}) {
			t.Fatalf("batch loader called with %v, want [[other]]", batchKeys)
		}
	})
}

// A Get of a key a GetMany is loading joins the batch's load.
func TestGetAndGetManyLoadOnceGetManyFirst(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		joined := make(chan string, 4)
		c := newCache[string](t, rdb, withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
		loading, release := make(chan struct{}), make(chan struct{})
		var batchLoads atomic.Int64
		manyDone := make(chan map[string]string, 1)
		go func() {
			m, err := c.GetMany(ctx, []string{"k", "other"}, func(_ context.Context, ks []string) (map[string]string, error) {
				batchLoads.Add(1)
				close(loading)
				<-release
				return map[string]string{"k": "batch-k", "other": "batch-other"}, nil
			})
			if err != nil {
				t.Error(err)
			}
			manyDone <- m
		}()
		<-loading
		got := make(chan string, 1)
		go func() {
			v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
				t.Error("Get loaded a key the GetMany was loading")
				return "get", nil
			})
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		if k := <-joined; k != "k" {
			t.Fatalf("Get joined %q", k)
		}
		close(release)
		if v := <-got; v != "batch-k" {
			t.Fatalf("Get got %q", v)
		}
		if m := <-manyDone; m["k"] != "batch-k" || m["other"] != "batch-other" {
			t.Fatalf("GetMany got %v", m)
		}
		if n := batchLoads.Load(); n != 1 {
			t.Fatalf("batch loader ran %d times", n)
		}
	})
}
