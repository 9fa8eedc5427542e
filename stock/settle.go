package stock

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// settleLua changes a reservation's state and writes the change to the
// outbox, in the script that calls it. op is confirm, release or expire;
// versions (1 reserve, 2 confirm, 3 release) let the database apply the
// changes in any order and keep the newest.
//
// KEYS: meta reqs users outbox due
const settleLua = xaddLua + `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function settle(rid, op, maxlen, now)
  local rec = redis.call('HGET', KEYS[2], rid)
  if not rec then return {'unknown'} end
  local r = cjson.decode(rec)
  if r.o ~= 'reserved' then return {'notreserved', rec} end
  local v
  if op == 'confirm' then
    if r.s == 'confirmed' then return {'dup', rec} end
    if r.s == 'released' then return {'released', rec} end
    redis.call('HINCRBY', KEYS[1], 'reserved', -r.q)
    redis.call('HINCRBY', KEYS[1], 'sold', r.q)
    r.s, v = 'confirmed', 2
  else
    if r.s == 'released' then return {'dup', rec} end
    if op == 'expire' and r.s ~= 'reserved' then
      redis.call('ZREM', KEYS[5], rid)
      return {'dup', rec}
    end
    if r.s == 'reserved' then
      redis.call('HINCRBY', KEYS[1], 'reserved', -r.q)
    else
      redis.call('HINCRBY', KEYS[1], 'sold', -r.q)
    end
    redis.call('HINCRBY', KEYS[1], 'remaining', r.q)
    if redis.call('HINCRBY', KEYS[3], r.u, -r.q) <= 0 then redis.call('HDEL', KEYS[3], r.u) end
    r.s, v = 'released', 3
  end
  redis.call('ZREM', KEYS[5], rid)
  rec = cjson.encode(r)
  redis.call('HSET', KEYS[2], rid, rec)
  xadd(KEYS[4], maxlen, {'op', op, 'req', rid, 'user', r.u, 'qty', r.q, 'v', v, 'at', now})
  return {'ok', rec}
end
`

// settleScript runs one Confirm or Release.  ARGV: rid op maxlen
var settleScript = redis.NewScript(settleLua + `
return settle(ARGV[1], ARGV[2], ARGV[3], now_ms())
`)

// expireScript releases up to ARGV[1] reservations whose hold is due by the
// Redis clock; it returns how many.  ARGV: limit maxlen
var expireScript = redis.NewScript(settleLua + `
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n = 0
for _, rid in ipairs(due) do
  local r = settle(rid, 'expire', ARGV[2], now)
  if r[1] == 'ok' then n = n + 1 end
  if r[1] == 'unknown' or r[1] == 'notreserved' then redis.call('ZREM', KEYS[5], rid) end
end
return n
`)

// Confirm marks a reservation paid: its units count as sold and it no longer
// expires. Confirming twice is a no-op; a reservation already released or
// expired returns ErrReleased.
func (inv *Inventory) Confirm(ctx context.Context, sku, requestID string) (Result, error) {
	return inv.settle(ctx, sku, requestID, "confirm")
}

// Release returns a reservation's units to the sale (an unpaid or cancelled
// order, a refund of a confirmed one). It is idempotent: releasing again
// answers with Duplicate set and changes nothing. The database learns of it
// through the outbox; if it arrives there before the reservation itself, the
// consumer parks it until the reservation is applied.
func (inv *Inventory) Release(ctx context.Context, sku, requestID string) (Result, error) {
	return inv.settle(ctx, sku, requestID, "release")
}

func (inv *Inventory) settle(ctx context.Context, sku, rid, op string) (Result, error) {
	if err := checkSKU(sku); err != nil {
		return Result{}, err
	}
	if err := checkID(rid, ErrInvalidArgument, "request id"); err != nil {
		return Result{}, err
	}
	// The request lives in its user's home bucket, which the caller need not
	// know: look in each (one round trip without buckets).
	for b := 0; b < inv.cfg.buckets; b++ {
		k := inv.keys(sku, b)
		v, err := do(inv.calls, ctx, func(ctx context.Context) ([]string, error) {
			return settleScript.Run(ctx, inv.rdb, []string{k.meta, k.reqs, k.users, k.outbox, k.due}, rid, op, inv.cfg.maxOutbox).StringSlice()
		})
		if err != nil {
			return Result{}, kind.Errorf("cacheguard: stock: %s %s/%s: %w", op, sku, rid, err)
		}
		if v[0] == "unknown" {
			continue
		}
		rec, err := decodeRecord(v[1])
		if err != nil {
			return Result{}, err
		}
		res := rec.result(b, v[0] == "dup")
		switch v[0] {
		case "notreserved":
			return res, fmt.Errorf("%w: %s/%s was answered %v", ErrNotReserved, sku, rid, res.Outcome)
		case "released":
			return res, fmt.Errorf("%w: %s/%s", ErrReleased, sku, rid)
		}
		if op == "release" {
			inv.soldOut.Delete(sku)
		}
		return res, nil
	}
	if err := inv.checkBuckets(ctx, sku); err != nil {
		return Result{}, kind.Errorf("cacheguard: stock: %s %s/%s: %w", op, sku, rid, err)
	}
	return Result{}, fmt.Errorf("%w: %s/%s", ErrUnknownRequest, sku, rid)
}

// ExpireDue releases the reservations of one bucket whose hold has run out,
// at most limit (>= 1) of them, and returns how many; bucket is 0 to the
// Inventory's bucket count - 1. The consumer calls it on every
// pass; it is exported for processes that run no consumer.
func (inv *Inventory) ExpireDue(ctx context.Context, sku string, bucket, limit int) (int, error) {
	if err := checkSKU(sku); err != nil {
		return 0, err
	}
	if bucket < 0 || bucket >= inv.cfg.buckets {
		return 0, fmt.Errorf("%w: bucket %d (0 to %d)", ErrInvalidArgument, bucket, inv.cfg.buckets-1)
	}
	if limit < 1 {
		return 0, fmt.Errorf("%w: limit %d (at least 1)", ErrInvalidArgument, limit)
	}
	return inv.expireDue(ctx, inv.calls, sku, bucket, limit)
}

// expireDue is ExpireDue on a bucket of the sale as loaded (the consumer
// drains sales of any bucket count).
func (inv *Inventory) expireDue(ctx context.Context, calls call.Bound, sku string, bucket, limit int) (int, error) {
	k := inv.keys(sku, bucket)
	n, err := do(calls, ctx, func(ctx context.Context) (int, error) {
		return expireScript.Run(ctx, inv.rdb, []string{k.meta, k.reqs, k.users, k.outbox, k.due}, limit, inv.cfg.maxOutbox).Int()
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, kind.Errorf("cacheguard: stock: expire %s/%d: %w", sku, bucket, err)
	}
	return n, nil
}

// Lookup returns the answer recorded under requestID (Duplicate set, State
// current), always asking Redis; ErrUnknownRequest if none was recorded
// (never asked, or answered NotOnSale or from the local sold-out memory).
func (inv *Inventory) Lookup(ctx context.Context, sku, requestID string) (Result, error) {
	if err := checkSKU(sku); err != nil {
		return Result{}, err
	}
	if err := checkID(requestID, ErrInvalidArgument, "request id"); err != nil {
		return Result{}, err
	}
	for b := 0; b < inv.cfg.buckets; b++ {
		s, err := do(inv.calls, ctx, func(ctx context.Context) (string, error) {
			return inv.rdb.HGet(ctx, inv.keys(sku, b).reqs, requestID).Result()
		})
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return Result{}, kind.Errorf("cacheguard: stock: lookup %s/%s: %w", sku, requestID, err)
		}
		rec, err := decodeRecord(s)
		if err != nil {
			return Result{}, err
		}
		return rec.result(b, true), nil
	}
	if err := inv.checkBuckets(ctx, sku); err != nil {
		return Result{}, kind.Errorf("cacheguard: stock: lookup %s/%s: %w", sku, requestID, err)
	}
	return Result{}, fmt.Errorf("%w: %s/%s", ErrUnknownRequest, sku, requestID)
}
