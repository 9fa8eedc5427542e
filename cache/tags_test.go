package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/write"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// orgOf tags a value "org/<n>:..." with "org:<n>", and every value with
// "all" (a tag with braces and the separator, on purpose).
func orgOf(_ string, v string) []string {
	org, _, _ := strings.Cut(v, ":")
	return []string{strings.Replace(org, "/", ":", 1), "{all}:x"}
}

// versionedLoader returns "<org of key>:v<n>" where n counts the loads of
// the key, so that a reload is seen in the value.
type versionedLoader struct {
	mu    sync.Mutex
	loads map[string]int
}

func (l *versionedLoader) load(_ context.Context, key string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loads == nil {
		l.loads = map[string]int{}
	}
	l.loads[key]++
	org, _, _ := strings.Cut(key, "-")
	return fmt.Sprintf("org/%s:%s:v%d", org, key, l.loads[key]), nil
}

func (l *versionedLoader) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loads[key]
}

// A tag invalidated on instance A is a miss on B's local tier as soon as
// B has heard the invalidation (the local tier's bound), while B's entries
// of other tags stay local hits; a Redis hit of the invalidated entry is a
// miss on A, which has no local tier; and the entry A reloads, having read
// the tag's time, is valid for B: one load for the invalidation.
func TestTagInvalidatedOnAIsMissOnBLocalTier(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		redistest.NeedServer(t) // sharded pub/sub on the cluster
		ctx := context.Background()
		heard := make(chan []string, 4)
		a := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		b := localCacheWith(t, rdb, Values[string]{Tags: orgOf}, withHooks(&hooks{OnInvalidate: func(k []string) { heard <- k }}))
		var l versionedLoader
		for _, k := range []string{"1-a", "2-b"} {
			if v, err := b.Get(ctx, k, l.load); err != nil || v != "org/"+k[:1]+":"+k+":v1" {
				t.Fatalf("b.Get(%s) = %q, %v", k, v, err)
			}
		}
		for _, k := range []string{"1-a", "2-b"} {
			if _, ok := b.tier.Store().Get(k); !ok {
				t.Fatalf("b holds no local copy of %s", k)
			}
		}
		if err := a.InvalidateTags(ctx, "org:1"); err != nil {
			t.Fatal(err)
		}
		<-heard
		if v, err := a.Get(ctx, "1-a", l.load); err != nil || v != "org/1:1-a:v2" {
			t.Fatalf("a served %q, %v after org:1 was invalidated", v, err)
		}
		if s := a.Stats(); s.TagMisses != 1 || s.TagInvalidations != 1 || s.TagReads == 0 {
			t.Fatalf("a's stats %+v", s)
		}
		if v, err := b.Get(ctx, "1-a", never(t)); err != nil || v != "org/1:1-a:v2" {
			t.Fatalf("b served %q, %v after org:1 was invalidated and a reloaded it", v, err)
		}
		// b's tier admits a's reload, and its tag check keeps it a hit.
		waitFor(t, func() bool {
			b.Get(ctx, "1-a", never(t))
			fresh, e := b.tier.Get("1-a")
			return fresh && e != nil && e.Value == "org/1:1-a:v2"
		})
		if v, err := b.Get(ctx, "2-b", never(t)); err != nil || v != "org/2:2-b:v1" {
			t.Fatalf("b.Get(2-b) = %q, %v", v, err)
		}
		// A tag with braces and the separator.
		if err := a.InvalidateTags(ctx, "{all}:x"); err != nil {
			t.Fatal(err)
		}
		<-heard
		if v, _ := b.Get(ctx, "2-b", l.load); v != "org/2:2-b:v2" {
			t.Fatalf("b served %q after {all}:x was invalidated", v)
		}
	})
}

// A fill whose load started before InvalidateTags lands already invalid:
// the next Get, here or on another instance, loads again (the same rule
// as a fill after Delete); that reload read the tag's time, so it is valid
// everywhere.
func TestFillRacingInvalidateTagsLandsInvalid(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		other := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		var l versionedLoader
		var once sync.Once
		// c's clock jumps past the clock margin once the invalidation is
		// made: only a creation time taken before the load makes the
		// fill invalid.
		var offset atomic.Int64
		c.hooks().Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		c.hooks().AfterLoad = func(string) {
			once.Do(func() {
				if err := c.InvalidateTags(ctx, "org:1"); err != nil {
					t.Error(err)
				}
				offset.Store(int64(time.Second))
			})
		}
		if v, err := c.Get(ctx, "1-k", l.load); err != nil || v != "org/1:1-k:v1" {
			t.Fatalf("first Get = %q, %v", v, err)
		}
		c.hooks().AfterLoad = nil
		raw, err := rdb.Get(ctx, prefixFor(t)+"1-k").Bytes()
		if err != nil || !wire.IsTagged(raw) {
			t.Fatalf("the fill did not land tagged: %q, %v", raw, err)
		}
		if v, err := other.Get(ctx, "1-k", l.load); err != nil || v != "org/1:1-k:v2" {
			t.Fatalf("another instance served %q, %v: a value loaded before the invalidation", v, err)
		}
		if v, err := c.Get(ctx, "1-k", never(t)); err != nil || v != "org/1:1-k:v2" {
			t.Fatalf("served %q, %v, want the reload made after the invalidation", v, err)
		}
	})
}

// GetMany with tagged keys: the invalidated ones are reloaded with one
// loader call, the tag times of the whole batch are read with one MGET.
func TestGetManyTagged(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		var mu sync.Mutex
		var asked [][]string
		n := 0
		load := func(_ context.Context, keys []string) (map[string]string, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			asked = append(asked, slices.Sorted(slices.Values(keys)))
			out := map[string]string{}
			for _, k := range keys {
				out[k] = fmt.Sprintf("org/%s:%d", k[:1], n)
			}
			return out, nil
		}
		keys := []string{"1a", "1b", "2a", "3a"}
		if _, err := c.GetMany(ctx, keys, load); err != nil {
			t.Fatal(err)
		}
		if err := c.InvalidateTags(ctx, "org:1", "org:3"); err != nil {
			t.Fatal(err)
		}
		reads := c.Stats().TagReads
		got, err := c.GetMany(ctx, keys, load)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"1a": "org/1:2", "1b": "org/1:2", "2a": "org/2:1", "3a": "org/3:2"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		if len(asked) != 2 || !slices.Equal(asked[1], []string{"1a", "1b", "3a"}) {
			t.Errorf("loader asked %v", asked)
		}
		// One MGET for the batch's hits; the fill path reads the
		// invalidated ones' times once more.
		if s := c.Stats(); s.TagMisses != 3 || s.TagReads-reads > 2 {
			t.Errorf("tag misses %d, tag reads %d", s.TagMisses, s.TagReads-reads)
		}
	})
}

// Set computes tags from the value; a versioned write too, and an entry
// invalidated by a tag keeps its version when it is taken over, so an older
// versioned write is still refused.
func TestTagsWithSetAndVersionedWrites(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCacheWith(t, rdb, Values[string]{Tags: orgOf})
		if err := c.Set(ctx, "s", "org/4:set"); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.SetVersioned(ctx, "v", "org/4:v5", 5); !ok || err != nil {
			t.Fatalf("SetVersioned = %v, %v", ok, err)
		}
		if err := c.InvalidateTags(ctx, "org:4"); err != nil {
			t.Fatal(err)
		}
		loaded := func(_ context.Context, k string) (string, error) { return "org/4:loaded " + k, nil }
		for _, k := range []string{"s", "v"} {
			if v, err := c.Get(ctx, k, loaded); err != nil || v != "org/4:loaded "+k {
				t.Fatalf("Get(%s) = %q, %v after its tag was invalidated", k, v, err)
			}
		}
		if ok, err := c.SetVersioned(ctx, "v", "org/4:v3", 3); ok || err != nil {
			t.Fatalf("an older versioned write landed over an entry taken over after a tag invalidation: %v, %v", ok, err)
		}
	})
}

// Bad input is an error, never a panic.
func TestTagsBadInput(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	var reported atomic.Pointer[error]
	c := newCacheWith(t, rdb, Values[string]{Tags: func(_ string, v string) []string {
		switch v {
		case "many":
			return make([]string, wire.MaxTags+1)
		case "long":
			return []string{strings.Repeat("x", wire.MaxTagSize+1)}
		case "empty":
			return []string{"a", ""}
		case "panic":
			panic("tag function")
		case "none":
			return []string{}
		}
		return []string{v}
	}}, WithErrorHandler(func(err error) { reported.Store(&err) }))
	for _, v := range []string{"many", "long", "empty", "panic"} {
		if err := c.Set(ctx, "k", v); !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidOption) {
			t.Errorf("Set with tags %q: %v", v, err)
		}
		// A fill serves the value and reports, not caching it.
		key := "fill-" + v
		got, err := c.Get(ctx, key, func(context.Context, string) (string, error) { return v, nil })
		if err != nil || got != v {
			t.Errorf("Get of a value with tags %q = %q, %v", v, got, err)
		}
		if e := reported.Load(); e == nil || !errors.Is(*e, ErrInvalidArgument) {
			t.Errorf("fill with tags %q reported %v", v, e)
		}
		if n := rdb.Exists(ctx, prefixFor(t)+key).Val(); n != 0 {
			t.Errorf("a value with tags %q was cached", v)
		}
	}
	// An empty tag list is an untagged entry.
	if err := c.Set(ctx, "k", "none"); err != nil {
		t.Fatal(err)
	}
	if raw, _ := rdb.Get(ctx, prefixFor(t)+"k").Bytes(); wire.IsTagged(raw) {
		t.Error("an empty tag list tagged the entry")
	}
	if err := c.InvalidateTags(ctx); err != nil {
		t.Errorf("no tags: %v", err)
	}
	for name, tags := range map[string][]string{
		"empty tag": {"a", ""},
		"long tag":  {strings.Repeat("x", wire.MaxTagSize+1)},
		"too many":  make([]string, write.MaxTagsPerInvalidation+1),
	} {
		if err := c.InvalidateTags(ctx, tags...); !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidOption) {
			t.Errorf("InvalidateTags with %s: %v", name, err)
		}
	}
}

// An untagged cache writes exactly the envelope it wrote before tags.
func TestUntaggedEnvelopeUnchanged(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	raw, _ := rdb.Get(ctx, prefixFor(t)+"k").Bytes()
	if wire.IsTagged(raw) || len(raw) != wire.HeaderSize+1 || raw[wire.FlagsOffset] != 0 {
		t.Fatalf("untagged entry %q", raw)
	}
}

// A gap in the invalidation stream (a flush) or the subscription going down
// drops the tag times an instance keeps, as it clears the local tier.
func TestTagTimesDroppedByFlushAndDown(t *testing.T) {
	_, rdb := newSingle(t)
	c := localCacheWith(t, rdb, Values[string]{Tags: orgOf})
	known := func() bool {
		now := c.tier.Now()
		epoch, ok := c.tier.TagTrust(now)
		_, known := c.tier.TagTime("org:1", epoch, now)
		return ok && known
	}
	c.tier.ApplyTags([]string{"org:1"}, 1)
	if !known() {
		t.Fatal("the tag time was not kept")
	}
	c.tier.Flush()
	if known() {
		t.Fatal("a flush left the tag time")
	}
	c.tier.ApplyTags([]string{"org:1"}, 1)
	c.tier.Down() // the subscription went down
	if known() {
		t.Fatal("the subscription going down left the tag time")
	}
}

// An early refresh writes the refreshed value's tags, with the time its
// load started; an invalidation after it makes the refreshed entry a miss.
func TestEarlyRefreshKeepsTags(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCacheWith(t, rdb, Values[string]{Tags: orgOf}, WithEarlyRefresh(1), WithTTL(time.Minute), WithJitter(0))
		var l versionedLoader
		if _, err := c.Get(ctx, "5-k", l.load); err != nil {
			t.Fatal(err)
		}
		filled := make(chan bool, 1)
		// Half a second before the expiry, with dice that always refresh.
		c.hooks().Now = func() time.Time { return time.Now().Add(time.Minute - 500*time.Millisecond) }
		c.hooks().Rand = func() float64 { return 1e-300 }
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		if v, err := c.Get(ctx, "5-k", l.load); err != nil || v != "org/5:5-k:v1" {
			t.Fatalf("hit = %q, %v", v, err)
		}
		if !<-filled {
			t.Fatal("the refresh did not land")
		}
		c.hooks().Rand, c.hooks().OnFill = nil, nil
		raw, _ := rdb.Get(ctx, prefixFor(t)+"5-k").Bytes()
		info, ok := wire.ParseTags(raw)
		if !ok || !slices.Equal(info.Tags, []string{"org:5", "{all}:x"}) {
			t.Fatalf("refreshed entry's tags %+v, %v", info, ok)
		}
		if err := c.InvalidateTags(ctx, "org:5"); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, "5-k", l.load); err != nil || v != "org/5:5-k:v3" {
			t.Fatalf("after the invalidation got %q, %v", v, err)
		}
	})
}
