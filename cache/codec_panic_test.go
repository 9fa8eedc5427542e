package cache

import (
	"context"
	"strings"
	"testing"
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

type panicCodec struct{}

func (panicCodec) Marshal(any) ([]byte, error) { panic("codec bug") }
func (panicCodec) Unmarshal([]byte, any) error { panic("codec bug") }
