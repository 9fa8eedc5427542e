package wire

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// lockViewLua answers what LockLua says of the string ARGV[1]: fenced_of's
// four results ("-" for a value it rejects) and holder_of's two (no owner
// without a hold).
var lockViewLua = redis.NewScript(LockLua + `
local token, n, mark, owner = fenced_of(ARGV[1])
local h, o = holder_of(ARGV[1])
if h < 1 then o = nil end
if not token then return {'-', 0, '', '', h, o or ''} end
return {token, n, mark, owner, h, o or ''}
`)

// lockWriteLua writes with LockFencedLua what ARGV describes, and
// LockOneHoldLua's expression for the same lock held once.
var lockWriteLua = redis.NewScript(LockFencedLua + `
return {fenced(ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]), ` + LockOneHoldLua("ARGV[1]", "ARGV[4]") + `}
`)

// The Lua prelude and the Go functions read and write the Mutex strings
// alike.
func TestLockLuaReadsLikeGo(t *testing.T) {
	rdb := redistest.SharedSingle(t)
	ctx := context.Background()
	for _, l := range []FencedLock{
		{Token: 1764000000000000, Holds: 1, Owner: "ABC"},
		{Token: 7, Holds: 3, Waited: true, Owner: "a:b:#1:2w:"},
		{Token: 1764000000000001, Owner: "ignored"},
		{Token: 42, Waited: true},
		{Token: 9, Holds: 1, Owner: ""},
	} {
		v := l.String()
		got, err := lockWriteLua.Run(ctx, rdb, []string{"k"}, fmt.Sprint(l.Token), l.Holds, map[bool]string{true: LockWaitedMark}[l.Waited], l.Owner).StringSlice()
		if err != nil || got[0] != v {
			t.Errorf("%+v: Lua writes %q, %v; Go %q", l, got, err, v)
		}
		one := FencedLock{Token: l.Token, Holds: 1, Owner: l.Owner}.String()
		if got[1] != one {
			t.Errorf("%+v: LockOneHoldLua writes %q, Go %q", l, got[1], one)
		}
		if held, freed := LockHeldOnce(l.Token, l.Owner); held != one || freed != (FencedLock{Token: l.Token}).String() {
			t.Errorf("%+v: LockHeldOnce = %q, %q", l, held, freed)
		}
	}
	values := []string{"", "#", "#1", "#1:", "#1:1", "#1:1:", "#1:1:o", "#1:1w:o", "#1:1x:o", "#a:1:o", "#1:a:o", "# 1:1:o",
		"#-1:1:o", "#1:0:", "1", "1w", "1ww", "12x", "1:o", "3:x:y", "w", ":", "#1:1:o\nx", "#1:2w:#3:4:o"}
	for _, v := range values {
		got, err := lockViewLua.Run(ctx, rdb, []string{"k"}, v).Slice()
		if err != nil {
			t.Fatal(err)
		}
		want := []any{"-", int64(0), "", "", int64(0), ""}
		if l, ok := ParseFencedLock(v); ok {
			mark := ""
			if l.Waited {
				mark = LockWaitedMark
			}
			want = []any{fmt.Sprint(l.Token), l.Holds, mark, l.Owner, l.Holds, l.Owner}
		} else if h, o, ok := ParseUnfencedLock(v); ok {
			want[4], want[5] = h, o
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: Lua says %q, Go %q", v, got, want)
		}
	}
}

// Foreign strings are no lock, never a panic; a lock reads back as written.
func FuzzParseFencedLock(f *testing.F) {
	for _, s := range []string{"", "#1:1:o", "#1:1w:o", "12", "12w", "1:o", "#1:", "#99999999999999999999:1:o"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := ParseFencedLock(s)
		if !ok {
			return
		}
		if l.Holds == 0 {
			l.Owner = "" // not kept once released
		}
		if back, ok := ParseFencedLock(l.String()); !ok || back != l {
			t.Errorf("%q reads as %+v, which writes %q, read back as %+v", s, l, l.String(), back)
		}
	})
}
