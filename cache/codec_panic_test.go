package cache

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A codec that panics during a shared fill is an error, not a crash.
func TestCodecPanicIsAnError(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[user](t, rdb, WithCodec(panicCodec{}))
	_, err := c.Get(context.Background(), "k", func(context.Context, string) (user, error) { return user{1, "a"}, nil })
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("err = %v", err)
	}
}

// A codec that panics in a GetMany's fill, or in an early refresh, is an
// error (returned, or reported), not a crash; the cache goes on.
func TestCodecPanicInDetachedWorkIsAnError(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	codec := &armedCodec{}
	reported := make(chan error, 16)
	c := newCache[user](t, rdb, WithCodec(codec), WithEarlyRefresh(1), WithJitter(0),
		WithErrorHandler(func(err error) { reported <- err }))
	codec.armed.Store(true)
	_, err := c.GetMany(ctx, []string{"a", "b"}, func(_ context.Context, keys []string) (map[string]user, error) {
		return map[string]user{"a": {1, "a"}, "b": {2, "b"}}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "fill of") || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("GetMany with a panicking codec: %v; want the fill's panic as an error", err)
	}
	codec.armed.Store(false)
	load := func(context.Context, string) (user, error) { return user{3, "k"}, nil }
	if v, err := c.Get(ctx, "k", load); err != nil || v.Name != "k" {
		t.Fatalf("Get = %v, %v", v, err)
	}
	codec.armed.Store(true) // the refresh's encoding panics
	nearExpiry(c, 10*time.Minute)
	if v, err := c.Get(ctx, "k", load); err != nil || v.Name != "k" {
		t.Fatalf("the hit that starts the refresh: %v, %v", v, err)
	}
	for {
		err := recvOr(t, reported, "the refresh's panic reported")
		if strings.Contains(err.Error(), "refresh of") && strings.Contains(err.Error(), "panicked") {
			break
		}
	}
}

type panicCodec struct{}

func (panicCodec) Marshal(any) ([]byte, error) { panic("codec bug") }
func (panicCodec) Unmarshal([]byte, any) error { panic("codec bug") }

// armedCodec is JSON whose Marshal panics while armed.
type armedCodec struct{ armed atomic.Bool }

func (c *armedCodec) Marshal(v any) ([]byte, error) {
	if c.armed.Load() {
		panic("codec bug")
	}
	return json.Marshal(v)
}

func (c *armedCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
