package bloom

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// testScript answers one key: 1 may be present, 0 absent, -1 not ready (the
// filter is missing, lost its bitmap or is still warming up).
//
// A zero bit is only an answer if the bitmap exists (GETBIT reads a missing
// key as zeros), so EXISTS is asked then, and only then.
//
// KEYS: cfg, bits. ARGV: params, m, k, the key's k packed offsets.
var testScript = redis.NewScript(checkLua + offsetLua + `
if not ready then return -1 end
local s = ARGV[4]
for p = 1, #s, 4 do
  if redis.call('GETBIT', KEYS[2], offset(s, p)) == 0 then
    if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
    return 0
  end
end
return 1
`)

// testManyScript answers several keys at once: a string with '1' (may be
// present) or '0' (absent) per key, or -1 when not ready. When the bitmap is
// small next to the batch (at most 128 bytes per offset) it reads the bitmap
// once and tests bits in Lua, which is far cheaper than a GETBIT call per
// bit; otherwise it calls GETBIT.
//
// KEYS: cfg, bits. ARGV: params, m, k, k packed offsets per key.
var testManyScript = redis.NewScript(checkLua + offsetLua + `
if not ready or redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local s, step = ARGV[4], 4 * tonumber(ARGV[3])
local bm
if tonumber(ARGV[2]) / 8 <= 128 * (#s / 4) then bm = redis.call('GET', KEYS[2]) end
local mask, floor, sbyte = {128, 64, 32, 16, 8, 4, 2, 1}, math.floor, string.byte
local function isset(o)
  if not bm then return redis.call('GETBIT', KEYS[2], o) end
  local byte = sbyte(bm, floor(o / 8) + 1)
  if not byte then return 0 end
  return floor(byte / mask[o % 8 + 1]) % 2
end
local out = {}
for p = 1, #s, step do
  local hit = '1'
  for q = p, p + step - 1, 4 do
    if isset(offset(s, q)) == 0 then hit = '0'; break end
  end
  out[#out + 1] = hit
end
return table.concat(out)
`)

// MayContain reports whether key may have been added; false is definite. It
// answers true, without error, while the shared filter is not ready. It is one
// round trip. On error it answers true as well, so a caller that ignores the
// error still does not reject a key.
func (r *Redis) MayContain(ctx context.Context, key string) (bool, error) {
	packed := r.p.pack(make([]byte, 0, 4*r.p.K), key)
	v, err := testScript.Run(ctx, r.rdb, []string{r.k.Cfg, r.k.Bits}, r.args(packed)...).Int64()
	if err != nil {
		return true, r.wrap(err)
	}
	r.ready.Store(v >= 0)
	return v != 0, nil
}

// MayContainMany is MayContain for several keys, out[i] answering keys[i]:
// one script per batch of keys (WithBatchSize), up to 16 batches pipelined
// per round trip.
func (r *Redis) MayContainMany(ctx context.Context, keys []string) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for window := range r.windows(keys) {
		batches := r.batches(window)
		cmds, err := r.pipeline(ctx, testManyScript, []string{r.k.Cfg, r.k.Bits}, batches)
		if err != nil {
			return nil, err
		}
		for i, cmd := range cmds {
			switch v := cmd.Val().(type) {
			case int64:
				r.ready.Store(false)
				for range batches[i].n {
					out = append(out, true)
				}
			case string:
				if len(v) != batches[i].n {
					return nil, fmt.Errorf("cacheguard: bloom: Redis filter %q: %d answers for %d keys", r.name, len(v), batches[i].n)
				}
				r.ready.Store(true)
				for j := 0; j < len(v); j++ {
					out = append(out, v[j] == '1')
				}
			default:
				return nil, fmt.Errorf("cacheguard: bloom: Redis filter %q: unexpected reply %T", r.name, v)
			}
		}
	}
	return out, nil
}
