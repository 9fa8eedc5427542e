package cache

import (
	"context"
	"testing"
	"time"
)

// A refresh keeps the entry's version; MarkStale keeps a versioned tombstone.
func TestVersionSurvivesRefreshAndMarkStale(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb, WithEarlyRefresh(1))
	c.SetVersioned(ctx, "k", "v5", 5)
	filled := make(chan bool, 1)
	c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
	nearExpiry(c, 10*time.Minute)
	c.Get(ctx, "k", func(context.Context, string) (string, error) { return "refreshed", nil })
	if !<-filled {
		t.Fatal("refresh refused")
	}
	if ok, _ := c.SetVersioned(ctx, "k", "v3", 3); ok {
		t.Fatal("older versioned write accepted after a refresh")
	}
	c.DeleteVersioned(ctx, "t", 7)
	c.MarkStale(ctx, time.Minute, "t")
	if ok, _ := c.SetVersioned(ctx, "t", "v6", 6); ok {
		t.Fatal("older versioned write accepted after MarkStale of a tombstone")
	}
}
