package cache

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// loadAndFillMany loads keys (whose leases we hold) with one loader call and
// fills them through their leases in one pipeline. A key whose fill was
// refused (a write landed meanwhile) is returned in again, to be read
// again, while refused allows; past it, it gets the value as loaded,
// uncached. seen holds tags' times read before the load (tags_check.go): each
// tagged fill records those of its tags.
func (c *Cache[V]) loadAndFillMany(ctx context.Context, keys []string, leases []lease, load BatchLoader[V], b *batch[V], refused *refusals, seen map[string]int64) (again []string, err error) {
	c.hold(leases...)
	defer c.unhold(leases...)
	var rows map[string]V
	created := c.now() // a tag invalidated from here on invalidates these fills
	start := time.Now()
	c.whileLeased(ctx, leases, func() { rows, err = c.callBatchLoader(ctx, keys, load) })
	delta := time.Since(start)
	for _, k := range keys {
		c.event(ctx, evLoaded, k, nil)
	}
	if err != nil {
		c.stats.loadErrors.Add(1)
		c.releaseLeases(ctx, leases)
		return nil, err
	}
	rs := make([]result[V], len(keys))
	calls := make([]script.Call, len(keys))
	for i, k := range keys {
		v, found := rows[k]
		var env []byte
		var ttl time.Duration
		if !found {
			rs[i] = result[V]{null: true}
			env, ttl = c.entry(true, 0, delta, nil)
		} else if base, ok := c.valueTTL(k, v); !ok {
			rs[i] = result[V]{v: v, noLocal: true} // served, not cached (ttlfunc.go)
		} else if payload, tags, err := c.encodeTagged(k, v); err != nil {
			c.uncacheable(k, err)
			rs[i] = result[V]{v: v, noLocal: true}
		} else {
			st := newStamp(tags, created, seen)
			rs[i] = result[V]{v: v, size: len(payload), tagged: st}
			env, ttl = c.taggedEntry(false, 0, delta, payload, base, tags, created, st.seenTimes())
		}
		if env == nil { // release instead of fill
			calls[i] = script.Call{Script: releaseScript, Keys: []string{leases[i].key}, Args: leases[i].releaseArgs()}
			continue
		}
		calls[i] = script.Call{Script: fillScript, Keys: []string{leases[i].key}, Args: leases[i].fillArgs(env, ttl)}
	}
	cmds, err := c.runScripts(ctx, calls)
	if err != nil {
		c.report(logFillFailed, keys[0], c.redisError(keys[0], "fill many", err))
		// The values are good; they are just not cached. Release the
		// leases that did not fill.
		c.releaseLeases(ctx, leases)
		for i, k := range keys {
			if calls[i].Script == fillScript {
				c.event(ctx, evFillAbandoned, k, err)
			}
			b.put(k, rs[i], TierFill)
		}
		return nil, nil
	}
	for i, k := range keys {
		if calls[i].Script != fillScript {
			b.put(k, rs[i], TierFill)
			continue
		}
		if err := cmds[i].Err(); err != nil {
			c.event(ctx, evFillFailed, k, err)
			b.put(k, rs[i], TierFill)
			continue
		}
		if cmds[i].Val() == int64(1) {
			b.put(k, rs[i], TierFill)
			c.event(ctx, evFilled, k, nil)
			continue
		}
		c.event(ctx, evFillRefused, k, nil)
		if refused.again(c.cfg.wait) {
			again = append(again, k)
			continue
		}
		rs[i].noLocal = true
		b.put(k, rs[i], TierFill)
	}
	return again, nil
}

// healMany takes, in one pipeline, the keys (pending[i] for i in idx) whose
// placeholder has no TTL (see healScript); it returns the leases it took.
func (c *Cache[V]) healMany(ctx context.Context, pending []string, leases []lease, acq []*redis.StatusCmd, idx []int) (map[string]lease, error) {
	calls := make([]script.Call, len(idx))
	for j, i := range idx {
		prev, _ := acq[i].Bytes()
		calls[j] = script.Call{Script: healScript, Keys: []string{leases[i].key}, Args: []any{prev, leases[i].ph, px(c.cfg.lease)}}
	}
	cmds, err := c.runScripts(ctx, calls)
	healed := map[string]lease{}
	for j, i := range idx {
		if n, err := cmds[j].Int(); err == nil && n == 1 {
			healed[pending[i]] = leases[i]
		}
	}
	if err = callerErr(ctx, err); err != nil {
		c.releaseLeases(ctx, leasesOf(healed))
		return nil, c.redisError(pending[idx[0]], "check leases", err)
	}
	return healed, nil
}

func leasesOf(m map[string]lease) []lease {
	ls := make([]lease, 0, len(m))
	for _, l := range m {
		ls = append(ls, l)
	}
	return ls
}

func (c *Cache[V]) loadManyDirect(ctx context.Context, keys []string, load BatchLoader[V], b *batch[V]) error {
	rows, err := c.callBatchLoader(ctx, keys, load)
	if err != nil {
		c.stats.loadErrors.Add(1)
		return err
	}
	for _, k := range keys {
		v, ok := rows[k]
		b.put(k, result[V]{v: v, null: !ok, noLocal: true}, TierFill)
	}
	return nil
}

func (c *Cache[V]) callBatchLoader(ctx context.Context, keys []string, load BatchLoader[V]) (rows map[string]V, err error) {
	err = c.runLoad(ctx, "batch loader", func(ctx context.Context) (err error) {
		rows, err = load(ctx, keys)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil // all missing
	}
	return rows, err
}

func (c *Cache[V]) prefixed(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = c.rkey(k)
	}
	return out
}

// markManyWaited marks the placeholders seen under keys as waited for; false
// means one of them changed meanwhile (or the marks could not be set, and
// only polling is left for them): the caller should look again before
// waiting.
func (c *Cache[V]) markManyWaited(ctx context.Context, keys []string, prev [][]byte) bool {
	var rkeys []string
	var prevs [][]byte
	for i, k := range keys {
		if prev[i] != nil {
			rkeys, prevs = append(rkeys, c.rkey(k)), append(prevs, prev[i])
		}
	}
	if len(rkeys) == 0 {
		return true // no placeholder seen (a takeover race): polling covers it
	}
	held, err := c.markWaited(ctx, rkeys, prevs)
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

// isReplyErr reports an error Redis answered for one command (it did not
// run); anything else (a lost connection, a timeout) leaves unknown whether
// the command ran.
func isReplyErr(err error) bool {
	var reply redis.Error
	return err != nil && !errors.Is(err, redis.Nil) && errors.As(err, &reply)
}
