package wire

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// classifyLua answers, for the value ARGV[1] (or a missing key: no ARGV),
// what the prelude's functions say of it, in the order of luaView.
var classifyLua = redis.NewScript(Lua(`
local v = ARGV[1] or false
local base, kept, marked = placeholder(v)
local ver = version_of(v)
return {
	is_envelope(v) and 1 or 0,
	base and 1 or 0,
	kept or '',
	marked and 1 or 0,
	tombstone_version(v) or '',
	ver or '',
}
`))

// luaView is what Go says the prelude must answer for b.
func luaView(b []byte) []any {
	bit := func(ok bool) int64 {
		if ok {
			return 1
		}
		return 0
	}
	p, isPH := ParsePlaceholder(b)
	kept, tomb, ver := "", "", ""
	if isPH && p.Kept {
		kept = string(binary.BigEndian.AppendUint64(nil, p.Version))
		ver = kept
	}
	if v, ok := TombstoneVersion(b); ok {
		tomb = string(binary.BigEndian.AppendUint64(nil, v))
		ver = tomb
	}
	if IsEnvelope(b) {
		ver = string(b[VersionOffset : VersionOffset+VersionSize])
	}
	return []any{bit(IsEnvelope(b)), bit(isPH), kept, bit(isPH && p.Marked), tomb, ver}
}

// The Lua prelude and the Go functions read every value alike: the shapes,
// their near misses, and random bytes of the shapes' lengths.
func TestLuaReadsLikeGo(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	var tok [TokenSize]byte
	ph := Placeholder(tok)
	v5 := string(binary.BigEndian.AppendUint64(nil, 5))
	mark := string(rune(WaitMark))
	values := []string{
		"", "*", "\xfe", "\xfel", "\xfec", "\xfev", ph, ph + mark, ph + v5, ph + v5 + mark, ph + "x", ph + v5 + "x",
		ph + v5 + v5, string(AppendTombstone(nil, 5)), "\xfev" + v5[1:], "\xfev" + v5 + "x",
		string(AppendEnvelope(nil, FlagNull, 9, time.Now(), 0, nil)),
		string(AppendEnvelope(nil, FlagStale, 1<<63, time.Now(), 0, []byte("x"))),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{TombstoneSize, PlaceholderSize, PlaceholderMarkedSize, PlaceholderKeptSize, PlaceholderKeptMarkedSize, HeaderSize} {
		for range 20 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			b[0] = Magic
			b[1] = []byte{MagicEnvelope, MagicLease, MagicTombstone}[r.UintN(3)]
			if r.UintN(2) == 0 {
				b[n-1] = WaitMark
			}
			if r.UintN(2) == 0 && n > FormatOffset {
				b[FormatOffset] = EnvelopeFormat
			}
			values = append(values, string(b))
		}
	}
	for _, v := range values {
		got, err := classifyLua.Run(ctx, rdb, []string{"k"}, v).Slice()
		if err != nil {
			t.Fatal(err)
		}
		if want := luaView([]byte(v)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q (%s): Lua says %q, Go %q", v, Classify([]byte(v)), got, want)
		}
	}
	got, err := classifyLua.Run(ctx, rdb, []string{"k"}).Slice()
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]any{int64(0), int64(0), "", int64(0), "", ""}) {
		t.Errorf("a missing key: Lua says %q, %v", got, err)
	}
}

// next_nonce advances the nonce by one, wrapping at 2^32, and the version
// comparison is unsigned over the whole range.
func TestLuaArithmetic(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	nonce := redis.NewScript(Lua(`return next_nonce(ARGV[1])`))
	for in, want := range map[uint32]uint32{0: 1, 255: 256, 1<<32 - 1: 0, 0x01FFFFFF: 0x02000000} {
		env := AppendEnvelope(nil, 0, 0, time.Now(), 0, nil)
		binary.BigEndian.PutUint32(env[NonceOffset:], in)
		got, err := nonce.Run(ctx, rdb, []string{"k"}, env).Text()
		if err != nil || binary.BigEndian.Uint32([]byte(got)) != want {
			t.Errorf("next_nonce(%#x) = %x, %v; want %#x", in, got, err, want)
		}
	}
	newer := redis.NewScript(Lua(`return version_newer(ARGV[1], ARGV[2]) and 1 or 0`))
	for _, c := range [][2]uint64{{1, 0}, {0, 1}, {5, 5}, {1 << 63, 1<<63 - 1}, {1<<53 + 1, 1 << 53}, {256, 255}} {
		got, err := newer.Run(ctx, rdb, []string{"k"}, binary.BigEndian.AppendUint64(nil, c[0]), binary.BigEndian.AppendUint64(nil, c[1])).Int()
		if want := c[0] > c[1]; err != nil || (got == 1) != want {
			t.Errorf("version_newer(%d, %d) = %d, %v; want %v", c[0], c[1], got, err, want)
		}
	}
}
