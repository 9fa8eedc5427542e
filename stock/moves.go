package stock

import (
	"context"
	"strconv"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// moveWait bounds how long a request that found every bucket empty waits
// for units moving between buckets to land before it may answer SoldOut.
// Moves normally land within one round trip of the request that started
// them (or, if it died, when the consumer credits them).
const moveWait = 100 * time.Millisecond

// awaitMoves is the last chance of a request that borrowed nothing: while
// units are moving between buckets (other requests borrowed them, possibly
// more than they need, or a retry of this very request did), SoldOut would
// be recorded against the request id although units are there to sell. It
// waits, within moveWait, for the moves to land, trying the home bucket again
// (a move may land there; a racing retry of this request may have been
// answered there) and borrowing again (a move may land elsewhere). It returns
// the home bucket's answer if one came, or the credits of a new borrow;
// done false and no credits mean nothing is moving: SoldOut is the answer.
func (inv *Inventory) awaitMoves(ctx context.Context, sku string, home int, user, rid string, qty int64) (res Result, done bool, credits []any, err error) {
	wait := inv.moveWait
	if wait == 0 {
		wait = moveWait
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		moving, err := inv.inFlight(ctx, sku)
		if err != nil || moving <= 0 || time.Now().After(deadline) {
			return Result{}, false, nil, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, false, nil, kind.Errorf("cacheguard: stock: reserve %s: %w", sku, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 10*time.Millisecond)
		res, empty, err := inv.reserveAt(ctx, sku, home, user, rid, qty, false, nil)
		if err != nil || !empty {
			return res, true, nil, err
		}
		credits, err := inv.borrow(ctx, sku, home, qty)
		if err != nil || len(credits) > 0 {
			return Result{}, false, credits, err
		}
	}
}

// inFlight is how many units of sku are moving between buckets: taken from
// one and not yet credited to another.
func (inv *Inventory) inFlight(ctx context.Context, sku string) (int64, error) {
	n := inv.cfg.buckets
	cmds, err := do(inv.calls, ctx, func(ctx context.Context) ([]*redis.SliceCmd, error) {
		cmds := make([]*redis.SliceCmd, n)
		_, err := pipe.Run(ctx, inv.rdb.Pipeline(), func(p redis.Pipeliner) error {
			for b := 0; b < n; b++ {
				cmds[b] = p.HMGet(ctx, inv.keys(sku, b).meta, "xin", "xout")
			}
			return nil
		})
		return cmds, err
	})
	if err != nil {
		return 0, kind.Errorf("cacheguard: stock: reserve %s: moves: %w", sku, err)
	}
	var moving int64
	for _, c := range cmds {
		for i, v := range c.Val() {
			s, _ := v.(string)
			x, _ := strconv.ParseInt(s, 10, 64)
			if i == 0 {
				x = -x
			}
			moving += x
		}
	}
	return moving, nil
}
