package wire

import (
	"strconv"
	"strings"
)

// The value of a Mutex key (the base of a lock, see LockKey) is one string,
// with the lease as the key's expiry:
//
//	#<token>:<holds>[w]:<owner>   fenced, held: holds >= 1, the owner last (it may hold any byte)
//	<token>[w]                    fenced, released: the token is kept, with the lease the lock
//	                              had, as the floor of the next holder's token
//	<holds>:<owner>               a Mutex WithoutFencing (no token, deleted on release)
//
// Tokens are decimal, below 2^53 (a script may read a released token with
// Lua's tonumber, so a number under a Mutex key reads as one). The optional w marks a lock that a
// refused waiter waited for: its release looks at the wait list only then.
// The layouts never read as each other (a held fenced lock starts with
// LockFencedMark, a released one has no separator, an unfenced one has
// one), so each side sees the other's lock as held by someone else.
//
// Earlier versions kept a fenced Mutex as a hash {owner, n, token, w}
// (LockField*; the writer of an RWMutex still is one). The scripts of the
// string layout read such a hash as held while it has an owner, and take its
// token as the floor once it has none; scripts of the hash layout meeting a
// string fail with WRONGTYPE, so that processes of both versions sharing a
// Redis never grant one lock twice.
const (
	LockFencedMark = "#"
	LockWaitedMark = "w"
	lockSep        = ":"
)

// LockFencedLua defines WAITED (LockWaitedMark) and fenced(token, holds,
// mark, owner), the string of a fenced Mutex: held when holds > 0, the
// released token (owner unused) otherwise. token is a string of digits,
// mark empty or WAITED.
const LockFencedLua = `
local WAITED = '` + LockWaitedMark + `'
local function fenced(token, holds, mark, owner)
  if holds == 0 then return token .. mark end
  return '` + LockFencedMark + `' .. token .. '` + lockSep + `' .. holds .. mark .. '` + lockSep + `' .. owner
end
`

// LockOneHoldLua returns the Lua expression of the string of a fenced Mutex
// held once, unmarked, by the owner the expression owner gives, with the
// token the expression token gives (a string of digits): what
// LockFencedLua's fenced(token, 1, mark, owner) returns for an empty mark,
// without defining it.
func LockOneHoldLua(token, owner string) string {
	return "'" + LockFencedMark + "' .. " + token + " .. '" + lockSep + "1" + lockSep + "' .. " + owner
}

// LockLua is the prelude of the scripts that read a lock: the lock hash's
// field names as Lua locals, and the functions reading the Mutex strings:
//
//	owner_of(v)                 holds, owner of an unfenced string (0, nil for another value)
//	unfenced(holds, owner)      the unfenced string
//	fenced_of(v)                token (a string of digits), holds (0 once released), mark
//	                            ('' or 'w'), owner of a fenced string; nil for another value
//	holder_of(v)                holds, owner of either string (0, nil for another value)
const LockLua = `
local F_OWNER, F_HOLDS, F_TOKEN, F_WAITED = '` + LockFieldOwner + `', '` + LockFieldHolds + `', '` + LockFieldToken + `', '` + LockFieldWaited + `'
local function owner_of(v)
  local c = string.find(v, '` + lockSep + `', 1, true)
  if not c then return 0, nil end
  return tonumber(string.sub(v, 1, c - 1)) or 0, string.sub(v, c + 1)
end
local function unfenced(holds, owner) return holds .. '` + lockSep + `' .. owner end
local function fenced_of(v)
  local token, n, mark, owner = string.match(v, '^%` + LockFencedMark + `(%d+)%` + lockSep + `(%d+)(` + LockWaitedMark + `?)%` + lockSep + `(.*)$')
  if token then return token, tonumber(n), mark, owner end
  token, mark = string.match(v, '^(%d+)(` + LockWaitedMark + `?)$')
  if token then return token, 0, mark, '' end
  return nil
end
local function holder_of(v)
  local token, n, mark, owner = fenced_of(v)
  if token then return n, owner end
  return owner_of(v)
end
`

// FencedLock is the value of a fenced Mutex.
type FencedLock struct {
	Token  int64
	Holds  int64 // 0 once released: only the token is kept
	Waited bool  // a refused waiter marked it
	Owner  string
}

// String returns l as the string layout stores it (the owner is not kept
// once released).
func (l FencedLock) String() string {
	b := make([]byte, 0, 24+len(l.Owner))
	if l.Holds == 0 {
		b = strconv.AppendInt(b, l.Token, 10)
		if l.Waited {
			b = append(b, LockWaitedMark...)
		}
		return string(b)
	}
	b = append(b, LockFencedMark...)
	b = strconv.AppendInt(b, l.Token, 10)
	b = append(b, lockSep...)
	b = strconv.AppendInt(b, l.Holds, 10)
	if l.Waited {
		b = append(b, LockWaitedMark...)
	}
	b = append(b, lockSep...)
	return string(append(b, l.Owner...))
}

// LockHeldOnce returns, in one allocation, the string of a fenced Mutex
// held once, unmarked, by owner with token, and that lock released:
// FencedLock{Token: token, Holds: 1, Owner: owner}.String() and
// FencedLock{Token: token}.String().
func LockHeldOnce(token int64, owner string) (held, freed string) {
	b := make([]byte, 0, 24+len(owner))
	b = append(b, LockFencedMark...)
	b = strconv.AppendInt(b, token, 10)
	n := len(b)
	b = append(b, lockSep+"1"+lockSep...)
	held = string(append(b, owner...))
	return held, held[len(LockFencedMark):n]
}

// ParseFencedLock reads the string of a fenced Mutex, held or released.
// Only the owner may be cut short: v may be the first bytes of a value.
func ParseFencedLock(v string) (FencedLock, bool) {
	v, held := strings.CutPrefix(v, LockFencedMark)
	token, rest, ok1 := cutDigits(v)
	if !held {
		if !ok1 || (rest != "" && rest != LockWaitedMark) {
			return FencedLock{}, false
		}
		return FencedLock{Token: token, Waited: rest != ""}, true
	}
	rest, ok2 := strings.CutPrefix(rest, lockSep)
	holds, rest, ok3 := cutDigits(rest)
	if !ok1 || !ok2 || !ok3 {
		return FencedLock{}, false
	}
	l := FencedLock{Token: token, Holds: holds}
	if strings.HasPrefix(rest, LockWaitedMark) {
		l.Waited, rest = true, rest[len(LockWaitedMark):]
	}
	owner, ok4 := strings.CutPrefix(rest, lockSep)
	if !ok4 {
		return FencedLock{}, false
	}
	l.Owner = owner
	return l, true
}

// cutDigits reads the decimal number at the start of s and returns the rest.
// Only what Lua's %d matches is read: digits, no sign, no space.
func cutDigits(s string) (int64, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, s[i:], true
}

// ParseUnfencedLock reads the string a Mutex WithoutFencing stores,
// "<holds>:<owner>".
func ParseUnfencedLock(v string) (holds int64, owner string, ok bool) {
	n, owner, found := strings.Cut(v, lockSep)
	holds, err := strconv.ParseInt(n, 10, 64)
	if !found || err != nil || holds < 1 || owner == "" {
		return 0, "", false
	}
	return holds, owner, true
}
