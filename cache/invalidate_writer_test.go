package cache

import (
	"context"
	"testing"
)

// A writer without a local tier still tells the readers that have one.
func TestWriterWithoutLocalTierInvalidatesReaders(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	got := make(chan []string, 4)
	reader := localCache(t, rdb, withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }}))
	writer := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
	writer.Set(ctx, "k", "old")
	<-got // that Set's own message, so it cannot land during the read below
	if v, _ := reader.Get(ctx, "k", never(t)); v != "old" {
		t.Fatal(v)
	}
	if _, ok := reader.tier.Store().Get("k"); !ok {
		t.Fatal("reader did not keep a local copy")
	}
	writer.Set(ctx, "k", "new")
	<-got
	if v, _ := reader.Get(ctx, "k", never(t)); v != "new" {
		t.Fatalf("reader served %q after the writer's Set", v)
	}
}
