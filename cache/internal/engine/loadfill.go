package engine

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// loadAndFillMany loads keys (whose leases we hold) with one loader call and
// fills them through their leases in one pipeline. A key whose fill was
// refused (a write landed meanwhile) is returned in again, to be read
// again, while refused allows; past it, it gets the value as loaded,
// uncached. seen holds tags' times read before the load (tags_check.go): each
// tagged fill records those of its tags.
func (c *Engine[V]) loadAndFillMany(ctx context.Context, keys []string, leases []lease.Lease, load BatchLoader[V], b *batch[V], refused *refusals, seen map[string]int64) (again []string, err error) {
	defer c.unhold(leases...) // registered by fillMany's round
	var rows map[string]V
	created := c.Format.Now() // a tag invalidated from here on invalidates these fills
	start := time.Now()
	c.Leases.While(ctx, leases, func() { rows, err = c.callBatchLoader(ctx, keys, load) })
	delta := time.Since(start)
	for _, k := range keys {
		c.event(ctx, evLoaded, k, nil)
	}
	if err != nil {
		c.Rec.LoadErrors.Add(1)
		c.Leases.Release(ctx, leases)
		return nil, err
	}
	rs := make([]entry.Result[V], len(keys))
	calls := make([]script.Call, len(keys))
	for i, k := range keys {
		v, found := rows[k]
		var env []byte
		var ttl time.Duration
		if !found {
			rs[i] = entry.Result[V]{Null: true}
			env, ttl = c.Format.Entry(true, 0, delta, nil)
		} else if base, ok := c.Format.ValueTTL(k, v); !ok {
			rs[i] = entry.Result[V]{V: v, NoLocal: true} // served, not cached (entry.Format.ValueTTL)
		} else if payload, tags, err := c.Format.EncodeTagged(k, v); err != nil {
			c.Format.Uncacheable(k, err)
			rs[i] = entry.Result[V]{V: v, NoLocal: true}
		} else {
			st := entry.NewStamp(tags, created, seen)
			rs[i] = entry.Result[V]{V: v, Size: len(payload), Tagged: st}
			env, ttl = c.Format.TaggedEntry(false, 0, delta, payload, base, tags, created, st.SeenTimes())
		}
		if env == nil { // release instead of fill
			calls[i] = leases[i].ReleaseCall()
			continue
		}
		calls[i] = leases[i].FillCall(env, ttl)
	}
	cmds, err := c.Redis.RunScripts(ctx, calls)
	if err != nil {
		c.Rec.Report(telemetry.FillFailed, keys[0], c.Redis.Error(keys[0], "fill many", err))
		// The values are good; they are just not cached. Release the
		// leases that did not fill.
		c.Leases.Release(ctx, leases)
		for i, k := range keys {
			if calls[i].Script == lease.FillScript {
				c.event(ctx, evFillAbandoned, k, err)
			}
			b.put(k, rs[i], telemetry.TierFill)
		}
		return nil, nil
	}
	for i, k := range keys {
		if calls[i].Script != lease.FillScript {
			b.put(k, rs[i], telemetry.TierFill)
			continue
		}
		if err := cmds[i].Err(); err != nil {
			c.event(ctx, evFillFailed, k, err)
			b.put(k, rs[i], telemetry.TierFill)
			continue
		}
		if cmds[i].Val() == int64(1) {
			b.put(k, rs[i], telemetry.TierFill)
			c.event(ctx, evFilled, k, nil)
			continue
		}
		c.event(ctx, evFillRefused, k, nil)
		if refused.again(c.cfg.Wait) {
			again = append(again, k)
			continue
		}
		rs[i].NoLocal = true
		b.put(k, rs[i], telemetry.TierFill)
	}
	return again, nil
}

// healMany takes, in one pipeline, the keys (pending[i] for i in idx) whose
// placeholder has no TTL (see lease.HealScript); it returns the leases it took.
func (c *Engine[V]) healMany(ctx context.Context, pending []string, leases []lease.Lease, acq []*redis.StatusCmd, idx []int) (map[string]lease.Lease, error) {
	calls := make([]script.Call, len(idx))
	for j, i := range idx {
		prev, _ := acq[i].Bytes()
		calls[j] = c.Leases.HealCall(leases[i], prev)
	}
	cmds, err := c.Redis.RunScripts(ctx, calls)
	healed := map[string]lease.Lease{}
	for j, i := range idx {
		if n, err := cmds[j].Int(); err == nil && n == 1 {
			healed[pending[i]] = leases[i]
		}
	}
	if err = errs.Caller(ctx, err); err != nil {
		c.Leases.Release(ctx, leasesOf(healed))
		return nil, c.Redis.Error(pending[idx[0]], "check leases", err)
	}
	return healed, nil
}

func leasesOf(m map[string]lease.Lease) []lease.Lease {
	ls := make([]lease.Lease, 0, len(m))
	for _, l := range m {
		ls = append(ls, l)
	}
	return ls
}

func (c *Engine[V]) loadManyDirect(ctx context.Context, keys []string, load BatchLoader[V], b *batch[V]) error {
	rows, err := c.callBatchLoader(ctx, keys, load)
	if err != nil {
		c.Rec.LoadErrors.Add(1)
		return err
	}
	for _, k := range keys {
		v, ok := rows[k]
		b.put(k, entry.Result[V]{V: v, Null: !ok, NoLocal: true}, telemetry.TierFill)
	}
	return nil
}

func (c *Engine[V]) callBatchLoader(ctx context.Context, keys []string, load BatchLoader[V]) (rows map[string]V, err error) {
	err = c.runLoad(ctx, "batch loader", func(ctx context.Context) (err error) {
		rows, err = load(ctx, keys)
		return err
	})
	if errors.Is(err, errs.ErrNotFound) {
		return nil, nil // all missing
	}
	return rows, err
}

// markManyWaited marks the placeholders seen under keys as waited for; false
// means one of them changed meanwhile (or the marks could not be set, and
// only polling is left for them): the caller should look again before
// waiting.
func (c *Engine[V]) markManyWaited(ctx context.Context, keys []string, prev [][]byte) bool {
	var rkeys []string
	var prevs [][]byte
	for i, k := range keys {
		if prev[i] != nil {
			rkeys, prevs = append(rkeys, c.Keys.Key(k)), append(prevs, prev[i])
		}
	}
	if len(rkeys) == 0 {
		return true // no placeholder seen (a takeover race): polling covers it
	}
	held, err := c.Leases.MarkWaited(ctx, rkeys, prevs)
	if err != nil {
		return true
	}
	for _, h := range held {
		if !h {
			return false
		}
	}
	return true
}
