package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/klauspost/compress/s2"
	"github.com/redis/go-redis/v9"
)

type report struct {
	ID    int      `json:"id"`
	Lines []string `json:"lines"`
}

func bigReport() report {
	r := report{ID: 7}
	for i := 0; i < 400; i++ {
		r.Lines = append(r.Lines, fmt.Sprintf("order %d shipped to warehouse %d", i, i%7))
	}
	return r
}

// A value over the threshold is stored compressed (flag set, fewer bytes) and
// reads back equal through Set, a loader fill and another instance that has
// compression off; a value under it is stored as it is.
func TestCompressionRoundTrips(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[report](t, rdb, WithCompression(1024))
		plain := newCache[report](t, rdb) // same prefix, compression off
		want := bigReport()
		encoded, _ := JSONCodec{}.Marshal(want)

		if err := c.Set(ctx, "set", want); err != nil {
			t.Fatal(err)
		}
		l := &countingLoader[report]{rows: map[string]report{"fill": want, "small": {ID: 1}}}
		if _, err := c.Get(ctx, "fill", l.load); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"set", "fill"} {
			raw, err := rdb.Get(ctx, prefixFor(t)+key).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			env, ok := wire.DecodeEnvelope(raw)
			if !ok || env.Flags&wire.FlagCompressed == 0 || len(env.Payload) >= len(encoded)/2 {
				t.Fatalf("%s: stored %d payload bytes (flags %b) for %d encoded, want compressed", key, len(env.Payload), env.Flags, len(encoded))
			}
			for _, r := range []*Cache[report]{c, plain} {
				got, err := r.Get(ctx, key, l.load)
				if err != nil || got.ID != want.ID || len(got.Lines) != len(want.Lines) || got.Lines[399] != want.Lines[399] {
					t.Fatalf("%s: Get = %d lines, %v", key, len(got.Lines), err)
				}
			}
		}
		if l.calls.Load() != 1 {
			t.Fatalf("loader ran %d times, want 1 (the fill)", l.calls.Load())
		}
		if _, err := c.Get(ctx, "small", l.load); err != nil {
			t.Fatal(err)
		}
		raw, _ := rdb.Get(ctx, prefixFor(t)+"small").Bytes()
		if env, ok := wire.DecodeEnvelope(raw); !ok || env.Flags&wire.FlagCompressed != 0 {
			t.Fatalf("small value stored with flags %b, want uncompressed", env.Flags)
		}
	})
}

// Bytes that do not shrink are stored as they are.
func TestCompressionSkipsIncompressible(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[[]byte](t, rdb, WithCompression(16))
	noise := make([]byte, 4096)
	rand.Read(noise)
	if err := c.Set(ctx, "k", noise); err != nil {
		t.Fatal(err)
	}
	raw, _ := rdb.Get(ctx, prefixFor(t)+"k").Bytes()
	env, ok := wire.DecodeEnvelope(raw)
	if !ok || env.Flags&wire.FlagCompressed != 0 || !bytes.Equal(env.Payload, noise) {
		t.Fatalf("random bytes stored with flags %b", env.Flags)
	}
	got, err := c.Get(ctx, "k", func(context.Context, string) ([]byte, error) { return nil, errors.New("no load") })
	if err != nil || !bytes.Equal(got, noise) {
		t.Fatalf("Get: %v", err)
	}
}

// A payload flagged compressed that is not S2, or that claims to expand past
// the size limit, is a corrupt entry: reloaded and overwritten, never a panic
// nor an unbounded allocation.
func TestCompressedGarbageIsAMiss(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithCompression(8), WithMaxValueSize(1<<10))
		exp := time.Now().Add(time.Hour)
		bomb := binary.AppendUvarint(nil, 1<<30) // S2 block header: decoded length 1 GiB
		bomb = append(bomb, 0, 0, 0)
		tooBig := s2.Encode(nil, []byte(strings.Repeat("a", 4<<10)))
		for i, payload := range [][]byte{[]byte("not s2 at all"), bomb, tooBig, nil} {
			key := fmt.Sprint("g", i)
			rdb.Set(ctx, prefixFor(t)+key, wire.AppendEnvelope(nil, wire.FlagCompressed, 0, exp, 0, payload), time.Hour)
			l := &countingLoader[string]{rows: map[string]string{key: "fresh"}}
			v, err := c.Get(ctx, key, l.load)
			if err != nil || v != "fresh" || l.calls.Load() != 1 {
				t.Fatalf("garbage %d: Get = %q, %v after %d loads", i, v, err, l.calls.Load())
			}
		}
		if got := c.Stats().Corrupt; got != 4 {
			t.Fatalf("corrupt count %d, want 4", got)
		}
	})
}

func TestCompressionRejectsNegativeThreshold(t *testing.T) {
	_, rdb := newSingle(t)
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithCompression(-1)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("New = %v, want ErrInvalidOption", err)
	}
}

// Delete removes keys with UNLINK (freed off the main thread), never DEL,
// so deleting a big key does not block Redis.
func TestDeleteUsesUnlink(t *testing.T) {
	s, rdb := newSingle(t)
	if s.Mini != nil {
		t.Skip("miniredis keeps no command statistics")
	}
	ctx := context.Background()
	c := newCache[string](t, rdb)
	stat := func(cmd string) int64 {
		n, _, err := redistest.CommandStat(ctx, rdb.(*redis.Client), cmd)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	c.Set(ctx, "a", "1")
	c.Set(ctx, "b", "2")
	unlink, del := stat("unlink"), stat("del")
	if err := c.Delete(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if stat("unlink")-unlink != 2 || stat("del") != del {
		t.Fatalf("Delete ran %d UNLINK and %d DEL, want 2 and 0", stat("unlink")-unlink, stat("del")-del)
	}
}
