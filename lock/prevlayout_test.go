package lock

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// The Mutex scripts of the hash layout, as the version before the string
// layout ran them (its prelude, wire.LockLua then, written out): the
// fixture of a rolling deploy, where processes of both versions share a
// Redis. Kept verbatim; never change them to follow the package.
const prevLockLua = `
local F_OWNER, F_HOLDS, F_TOKEN, F_WAITED = 'owner', 'n', 'token', 'w'
local function owner_of(v)
  local c = string.find(v, ':', 1, true)
  if not c then return 0, nil end
  return tonumber(string.sub(v, 1, c - 1)) or 0, string.sub(v, c + 1)
end
local function unfenced(holds, owner) return holds .. ':' .. owner end
`

var (
	// prevAcquire: ARGV owner, lease ms, "1" (fencing), "1" when the
	// caller waits. Replies {holds, token, pttl} or {0, pttl}.
	prevAcquire = redis.NewScript(prevLockLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_TOKEN)
local owner = h[1]
if not owner then
  local token = 0
  if ARGV[3] == '1' then
    local t = redis.call('TIME')
    token = tonumber(h[2] or '0') + 1
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if token < floor then token = floor end
  end
  redis.call('HSET', KEYS[1], F_OWNER, ARGV[1], F_HOLDS, 1, F_TOKEN, string.format('%.0f', token))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token, tonumber(ARGV[2])}
end
if owner == ARGV[1] then
  local n = redis.call('HINCRBY', KEYS[1], F_HOLDS, 1)
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    pttl = tonumber(ARGV[2])
  end
  return {n, tonumber(h[2]), pttl}
end
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], F_WAITED, '1') end
return {0, redis.call('PTTL', KEYS[1])}
`)
	// prevRelease: ARGV owner, all, publish command, channel, payload,
	// token. Replies the holds left, 0 when freed, -1 when not held.
	prevRelease = redis.NewScript(prevLockLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_HOLDS, F_TOKEN, F_WAITED)
if h[1] ~= ARGV[1] then return -1 end
if ARGV[6] and ARGV[6] ~= '' and h[3] ~= ARGV[6] then return -1 end
if ARGV[2] ~= '1' and h[2] ~= '1' then
  return redis.call('HINCRBY', KEYS[1], F_HOLDS, -1)
end
if ARGV[3] == '' or (KEYS[2] and not h[4]) then
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
  return 0
end
local target = ''
if KEYS[2] then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS, F_WAITED)
    return 0
  end
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  target = redis.call('ZRANDMEMBER', KEYS[2])
  if not target then return 0 end
else
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
end
redis.call(ARGV[3], ARGV[4], ARGV[5] .. '|' .. target)
return 0
`)
	// prevRenew: ARGV owner, lease ms. Replies the lease, 0 or -1.
	prevRenew = redis.NewScript(prevLockLua + `
local owner = redis.call('HGET', KEYS[1], F_OWNER)
if not owner then return 0 end
if owner ~= ARGV[1] then return -1 end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  pttl = tonumber(ARGV[2])
end
return pttl
`)
	// prevTTL: ARGV owner. Replies the lease or -3.
	prevTTL = redis.NewScript(prevLockLua + `
if redis.call('HGET', KEYS[1], F_OWNER) ~= ARGV[1] then return -3 end
return redis.call('PTTL', KEYS[1])
`)
)

// prevHold takes the lock at key as a process of the hash layout would.
func prevHold(t *testing.T, rdb redis.Scripter, key, owner string) int64 {
	t.Helper()
	v, err := prevAcquire.Run(testCtx(t), rdb, []string{key}, owner, 30000, "1", "0").Int64Slice()
	if err != nil || len(v) != 3 || v[0] != 1 {
		t.Fatalf("hash layout acquire: %v %v", v, err)
	}
	return v[1]
}

// prevUnhold releases it as that process would, announcing the release.
func prevUnhold(t *testing.T, rdb redis.Scripter, key, owner string) {
	t.Helper()
	n, err := prevRelease.Run(testCtx(t), rdb, []string{key, key + wire.LockWaitersSuffix},
		owner, "0", "publish", key+wire.LockReleasedSuffix, "prev-client", "").Int64()
	if err != nil || n != 0 {
		t.Fatalf("hash layout release: %d %v", n, err)
	}
}

func isWrongType(err error) bool {
	return err != nil && strings.Contains(err.Error(), "WRONGTYPE")
}

// TestRollingDeployHashHolder: a process of the hash layout holds a lock. A
// process of the string layout is refused meanwhile, waits, is woken by the
// old process's release, and draws a token above the old holder's.
func TestRollingDeployHashHolder(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	const key = "cacheguard:lock:{deploy-hash}"
	old := prevHold(t, rdb, key, "prev-owner")

	c := newClient(t, rdb, WithBackoff(time.Minute, time.Minute))
	blocked := make(chan struct{}, 16)
	c.hookWaiting = func(string) { blocked <- struct{}{} }
	m := c.Mutex("deploy-hash")
	h, err := m.TryLock(ctx)
	mustNotObtain(t, h, err)
	got := make(chan *Handle, 1)
	errs := make(chan error, 1)
	go func() {
		h, err := m.Lock(ctx)
		if err != nil {
			errs <- err
			return
		}
		got <- h
	}()
	<-blocked // subscribed, registered, refused by the hash
	select {
	case h := <-got:
		t.Fatalf("obtained (token %d) while the hash layout holds the lock", h.Token())
	default:
	}
	prevUnhold(t, rdb, key, "prev-owner")
	select {
	case h := <-got:
		if h.Token() <= old {
			t.Fatalf("token %d after the hash layout's %d", h.Token(), old)
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("the release of the hash layout did not wake the waiter of the string layout")
	}
}

// TestRollingDeployHashFloor: the token a released hash keeps is the floor
// of the string layout's next token, even when it is ahead of the clock.
func TestRollingDeployHashFloor(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	const key = "cacheguard:lock:{deploy-floor}"
	prevHold(t, rdb, key, "prev-owner")
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if err := rdb.HSet(ctx, key, "token", strconv.FormatInt(ahead, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	prevUnhold(t, rdb, key, "prev-owner")
	if tok := takeToken(t, newClient(t, rdb).Mutex("deploy-floor").TryLock); tok <= ahead {
		t.Fatalf("token %d after the hash layout's floor %d", tok, ahead)
	}
	if l, ok := mutexIn(ctx, rdb, key); !ok || l.Holds != 0 || l.Token <= ahead {
		t.Fatalf("after the release the key holds %+v, %v: want the string layout's released token", l, ok)
	}
}

// TestRollingDeployStringRefusesHashScripts: the scripts of the hash layout
// meet a lock of the string layout, held or released, with WRONGTYPE: an
// error, never a grant, and they change nothing.
func TestRollingDeployStringRefusesHashScripts(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	const key = "cacheguard:lock:{deploy-string}"
	m := newClient(t, rdb).Mutex("deploy-string")
	h, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held, _ := rdb.Get(ctx, key).Result()
	check := func(state string) {
		t.Helper()
		if v, err := prevAcquire.Run(ctx, rdb, []string{key}, "prev-owner", 30000, "1", "1").Result(); !isWrongType(err) {
			t.Fatalf("%s: hash layout acquire replied %v, %v: want WRONGTYPE", state, v, err)
		}
		if v, err := prevRelease.Run(ctx, rdb, []string{key, key + wire.LockWaitersSuffix},
			h.Owner(), "1", "publish", key+wire.LockReleasedSuffix, "prev-client", "").Result(); !isWrongType(err) {
			t.Fatalf("%s: hash layout release replied %v, %v: want WRONGTYPE", state, v, err)
		}
		for name, s := range map[string]*redis.Script{"renew": prevRenew, "ttl": prevTTL} {
			if v, err := s.Run(ctx, rdb, []string{key}, h.Owner(), 30000).Result(); !isWrongType(err) {
				t.Fatalf("%s: hash layout %s replied %v, %v: want WRONGTYPE", state, name, v, err)
			}
		}
	}
	check("held")
	if v, _ := rdb.Get(ctx, key).Result(); v != held {
		t.Fatalf("the hash layout's scripts changed the held lock: %q, was %q", v, held)
	}
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	check("released")
	if l, ok := mutexIn(ctx, rdb, key); !ok || l.Holds != 0 || l.Token != h.Token() {
		t.Fatalf("released lock %+v, %v: want its token %d kept", l, ok, h.Token())
	}
	var re redis.Error
	_, err = prevAcquire.Run(ctx, rdb, []string{key}, "prev-owner", 30000, "1", "0").Result()
	if !errors.As(err, &re) {
		t.Fatalf("hash layout acquire: %v: want an error reply (not ambiguous: its caller cleans nothing up)", err)
	}
}
