package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// reserveScript is the whole purchase on the user's home bucket: credit a
// transfer (if any), idempotency, window, per-user limit, deduction, hold
// timer and outbox entry, in one atomic step. A deduction therefore exists
// if and only if its outbox entry does.
//
// KEYS: meta reqs users outbox due xin
// ARGV: rid user qty buckets final(0|1) maxlen [xferID xferQty]...
var reserveScript = redis.NewScript(`
local meta, reqs, users, outbox, due, xin = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local rid, user, qty = ARGV[1], ARGV[2], tonumber(ARGV[3])
local m = redis.call('HMGET', meta, 'buckets', 'start', 'end', 'total', 'limit', 'hold', 'remaining')
if not m[1] then return {'nosale'} end
if m[1] ~= ARGV[4] then return {'buckets', m[1]} end
local remaining = tonumber(m[7])
for i = 7, #ARGV, 2 do
  if redis.call('SADD', xin, ARGV[i]) == 1 then
    redis.call('HINCRBY', meta, 'remaining', ARGV[i + 1])
    redis.call('HINCRBY', meta, 'xin', ARGV[i + 1])
    remaining = remaining + tonumber(ARGV[i + 1])
  end
end
local prev = redis.call('HGET', reqs, rid)
if prev then return {'dup', prev} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(m[2]) then return {'early', m[2]} end
local e = tonumber(m[3])
if e > 0 and now >= e then return {'ended', m[3]} end
local total = tonumber(m[4])
if qty > total and total > 0 then return {'toomany', m[4]} end
local function answer(o, s)
  local rec = cjson.encode({o = o, s = s, u = user, q = qty, t = now})
  redis.call('HSET', reqs, rid, rec)
  return rec
end
local held = tonumber(redis.call('HGET', users, user) or '0')
if held + qty > tonumber(m[5]) then return {'limit', answer('limit', '')} end
if remaining < qty then
  if ARGV[5] == '1' then return {'soldout', answer('soldout', '')} end
  return {'empty'}
end
redis.call('HINCRBY', meta, 'remaining', -qty)
redis.call('HINCRBY', meta, 'reserved', qty)
redis.call('HINCRBY', users, user, qty)
local hold = tonumber(m[6])
if hold > 0 then redis.call('ZADD', due, now + hold, rid) end
` + xaddLua + `
xadd(outbox, ARGV[6], {'op', 'reserve', 'req', rid, 'user', user, 'qty', qty, 'v', 1, 'at', now})
return {'reserved', answer('reserved', 'reserved')}
`)

// xaddLua appends an outbox entry, capped when maxlen is not 0.
const xaddLua = `
local function xadd(key, maxlen, fields)
  if maxlen ~= '0' then
    return redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', unpack(fields))
  end
  return redis.call('XADD', key, '*', unpack(fields))
end
`

// borrowScript moves up to qty units out of a bucket towards another one
// (fewer if it has fewer: scattered units still make up a purchase). The
// move is an outbox entry too, so that a crash before the credit lands
// loses nothing: the consumer credits it.
//
// KEYS: meta outbox   ARGV: to qty xferID maxlen
var borrowScript = redis.NewScript(`
local r = tonumber(redis.call('HGET', KEYS[1], 'remaining') or '-1')
if r < 0 then return -1 end
local q = math.min(r, tonumber(ARGV[2]))
if q <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'remaining', -q)
redis.call('HINCRBY', KEYS[1], 'xout', q)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
` + xaddLua + `
xadd(KEYS[2], ARGV[4], {'op', 'xfer', 'req', ARGV[3], 'to', ARGV[1], 'qty', q, 'v', 0, 'at', now})
return q
`)

// creditScript lands a transfer in its bucket, once per transfer id.
// KEYS: meta xin   ARGV: xferID qty
var creditScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'remaining', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'xin', ARGV[2])
return 1
`)

// Reserve asks for qty units of sku for user, under requestID. Asking again
// with the same request id returns the first answer (Duplicate set) and
// never deducts twice; a new request id is a new purchase. The answer is
// typed in Result.Outcome; errors are for bad input (ErrInvalid...), a
// mismatched configuration and Redis failures. With buckets, a user's
// purchases are served by their home bucket; when it is empty the request
// takes units from the other buckets in turn, so SoldOut means every bucket
// was found empty.
func (inv *Inventory) Reserve(ctx context.Context, sku, user, requestID string, qty int64) (Result, error) {
	if err := checkSKU(sku); err != nil {
		return Result{}, err
	}
	if err := checkID(user, ErrInvalidArgument, "user"); err != nil {
		return Result{}, err
	}
	if err := checkID(requestID, ErrInvalidArgument, "request id"); err != nil {
		return Result{}, err
	}
	if qty <= 0 || qty > MaxQty {
		return Result{}, fmt.Errorf("%w: quantity %d (1 to %d)", ErrInvalidArgument, qty, MaxQty)
	}
	if inv.SoldOutLocally(sku) {
		return Result{Outcome: SoldOut, Local: true, User: user, Qty: qty}, nil
	}
	n := inv.cfg.buckets
	h := homeBucket(user, n)
	res, empty, err := inv.reserveAt(ctx, sku, h, user, requestID, qty, n == 1, nil)
	if err != nil || !empty {
		return res, err
	}
	// The home bucket is short: take up to qty from every other bucket,
	// in one pipelined round trip, and credit all of it to the home bucket in
	// the final attempt (units beyond this request stay there for the next).
	credits, err := inv.borrow(ctx, sku, h, qty)
	if err != nil {
		return Result{}, err
	}
	if len(credits) == 0 {
		var done bool
		res, done, credits, err = inv.awaitMoves(ctx, sku, h, user, requestID, qty)
		if err != nil || done {
			return res, err
		}
	}
	if f := inv.hooks.afterBorrow; f != nil && len(credits) > 0 {
		if err := f(sku, h); err != nil {
			return Result{}, err
		}
	}
	res, _, err = inv.reserveAt(ctx, sku, h, user, requestID, qty, true, credits)
	return res, err
}

// reserveAt runs the script on bucket b; empty reports a bucket without
// enough units when final is false (nothing was recorded then).
func (inv *Inventory) reserveAt(ctx context.Context, sku string, b int, user, rid string, qty int64, final bool, credits []any) (Result, bool, error) {
	k := inv.keys(sku, b)
	fin := "0"
	if final {
		fin = "1"
	}
	args := append([]any{rid, user, qty, inv.cfg.buckets, fin, inv.cfg.maxOutbox}, credits...)
	v, err := do(inv.calls, ctx, func(ctx context.Context) ([]string, error) {
		return reserveScript.Run(ctx, inv.rdb, k.list(), args...).StringSlice()
	})
	if err != nil {
		return Result{}, false, kind.Errorf("cacheguard: stock: reserve %s: %w", sku, err)
	}
	if len(v) == 0 {
		return Result{}, false, fmt.Errorf("cacheguard: stock: reserve %s: empty reply", sku)
	}
	arg := ""
	if len(v) > 1 {
		arg = v[1]
	}
	switch v[0] {
	case "empty":
		return Result{}, true, nil
	case "nosale":
		// The bucket may be missing because the sale has fewer buckets
		// than this client, not because nothing is on sale.
		if err := inv.checkBuckets(ctx, sku); err != nil {
			return Result{}, false, kind.Errorf("cacheguard: stock: reserve %s: %w", sku, err)
		}
		return Result{Outcome: NotOnSale, User: user, Qty: qty, Bucket: b}, false, nil
	case "buckets":
		return Result{}, false, fmt.Errorf("%w: %s loaded with %s, client has %d", ErrBucketsMismatch, sku, arg, inv.cfg.buckets)
	case "early":
		ms, _ := strconv.ParseInt(arg, 10, 64)
		return Result{Outcome: NotOnSale, User: user, Qty: qty, Opens: time.UnixMilli(ms), Bucket: b}, false, nil
	case "ended":
		inv.rememberSoldOut(sku)
		return Result{Outcome: NotOnSale, User: user, Qty: qty, Bucket: b}, false, nil
	case "toomany":
		return Result{}, false, fmt.Errorf("%w: quantity %d above the sale's stock of %s", ErrInvalidArgument, qty, arg)
	case "dup", "limit", "soldout", "reserved":
		rec, err := decodeRecord(arg)
		if err != nil {
			return Result{}, false, err
		}
		res := rec.result(b, v[0] == "dup")
		if v[0] == "soldout" {
			inv.rememberSoldOut(sku)
		}
		return res, false, nil
	}
	return Result{}, false, fmt.Errorf("cacheguard: stock: reserve %s: unexpected reply %q", sku, v[0])
}

func (inv *Inventory) rememberSoldOut(sku string) {
	if inv.cfg.soldOutTTL > 0 {
		inv.soldOut.Store(sku, time.Now().Add(inv.cfg.soldOutTTL))
	}
}

// borrow takes up to qty units from each other bucket, for bucket to, in
// one pipeline by SHA (a move a server answered NOSCRIPT, never made,
// sent again with the script's body: internal/script), and returns the
// transfers as (id, qty) pairs for the reserve script. A transfer whose
// reply is lost is credited by the consumer.
func (inv *Inventory) borrow(ctx context.Context, sku string, to int, qty int64) ([]any, error) {
	n := inv.cfg.buckets
	ids := make([]string, 0, n-1)
	calls := make([]script.Call, 0, n-1)
	for b := 0; b < n; b++ {
		if b != to {
			k := inv.keys(sku, b)
			ids = append(ids, newID())
			calls = append(calls, script.Call{Script: borrowScript, Keys: []string{k.meta, k.outbox}, Args: []any{to, qty, ids[len(ids)-1], inv.cfg.maxOutbox}})
		}
	}
	cmds, err := do(inv.calls, ctx, func(ctx context.Context) ([]*redis.Cmd, error) {
		return script.Run(ctx, inv.rdb, calls)
	})
	var credits []any
	for i, c := range cmds {
		if got, e := c.Int64(); e == nil && got > 0 {
			credits = append(credits, ids[i], got)
		}
	}
	if err != nil && len(credits) == 0 {
		return nil, kind.Errorf("cacheguard: stock: reserve %s: borrow: %w", sku, err)
	}
	return credits, nil
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
