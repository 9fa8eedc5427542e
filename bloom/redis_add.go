package bloom

import (
	"context"
	"iter"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// addScript sets the keys' bits, creating the filter if it is missing, and in
// {N}:delta too while a rebuild holds the lease, so that the rebuilt filter
// keeps them. It returns 1 if the filter is ready, else 0.
//
// KEYS: cfg, bits, delta, build. ARGV: params, m, k, packed offsets.
var addScript = redis.NewScript(checkLua + createLua + offsetLua + setBitsLua + `
if ready then return 1 end
return 0
`)

// setBitsLua (after checkLua, createLua and offsetLua) sets the bits at the
// packed offsets ARGV[4] in the bitmap KEYS[2], and in the delta KEYS[3]
// while a rebuild holds the lease KEYS[4].
const setBitsLua = `
local building = redis.call('EXISTS', KEYS[4]) == 1
local s = ARGV[4]
for p = 1, #s, 4 do
  local o = offset(s, p)
  redis.call('SETBIT', KEYS[2], o, 1)
  if building then redis.call('SETBIT', KEYS[3], o, 1) end
end
`

// Add records keys, creating the filter if it is missing. Up to one batch
// (WithBatchSize) is one script call; more are pipelined, up to 16 batches
// per round trip.
func (r *Redis) Add(ctx context.Context, keys ...string) error {
	skeys := []string{r.k.Cfg, r.k.Bits, r.k.Delta, r.k.Build}
	if len(keys) <= r.cfg.batch {
		// The insert path: one script call, no pipeline. With no keys it
		// only creates the filter or checks its parameters.
		packed := make([]byte, 0, 4*len(keys)*int(r.p.K))
		for _, k := range keys {
			packed = r.p.pack(packed, k)
		}
		v, err := addScript.Run(ctx, r.rdb, skeys, r.args(packed)...).Int64()
		if err != nil {
			return r.wrap(err)
		}
		r.ready.Store(v == 1)
		return nil
	}
	for window := range r.windows(keys) {
		cmds, err := r.pipeline(ctx, addScript, skeys, r.batches(window))
		if err != nil {
			return err
		}
		r.ready.Store(cmds[len(cmds)-1].Val() == int64(1))
	}
	return nil
}

// pipelineDepth is how many script calls share one round trip; it bounds the
// memory a huge batched call holds at once.
const pipelineDepth = 16

// windows splits keys into pipelineDepth batches' worth.
func (r *Redis) windows(keys []string) iter.Seq[[]string] {
	return func(yield func([]string) bool) {
		size := r.cfg.batch * pipelineDepth
		for len(keys) > 0 {
			n := min(len(keys), size)
			if !yield(keys[:n]) {
				return
			}
			keys = keys[n:]
		}
	}
}

// batch is one script call's worth of keys.
type batch struct {
	n    int
	args []any
}

func (r *Redis) batches(keys []string) []batch {
	var out []batch
	for len(keys) > 0 {
		n := min(len(keys), r.cfg.batch)
		packed := make([]byte, 0, 4*n*int(r.p.K))
		for _, k := range keys[:n] {
			packed = r.p.pack(packed, k)
		}
		out = append(out, batch{n: n, args: r.args(packed)})
		keys = keys[n:]
	}
	return out
}

// pipeline runs s once per batch in one round trip, by SHA; the calls a
// server answers NOSCRIPT (a restarted or new node) are sent again with the
// script's body, and only those (internal/script).
func (r *Redis) pipeline(ctx context.Context, s *redis.Script, keys []string, batches []batch) ([]*redis.Cmd, error) {
	calls := make([]script.Call, len(batches))
	for i, b := range batches {
		calls[i] = script.Call{Script: s, Keys: keys, Args: b.args}
	}
	cmds, err := script.Run(ctx, r.rdb, calls)
	if err != nil {
		return nil, r.wrap(err)
	}
	return cmds, nil
}
