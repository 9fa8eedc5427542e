package consistency

import (
	"context"
	"time"
)

// farFuture is the worker's wake time while it is draining: any delete
// recorded meanwhile kicks it, so it looks once more before sleeping.
var farFuture = time.Unix(1<<40, 0)

// run is the background worker: drain what is due, then sleep until the
// earliest entry left comes due, a delete recorded here kicks it, or the
// poll interval passes, whichever is first.
func (q *Queue) run() {
	defer q.wg.Done()
	for {
		q.wakeMu.Lock()
		q.wakeAt = farFuture
		q.wakeMu.Unlock()
		n, next, err := q.drain(q.ctx)
		if q.ctx.Err() != nil {
			return
		}
		if err != nil {
			q.report("", nil, err)
		}
		if q.cfg.hooks.afterDrain != nil {
			q.cfg.hooks.afterDrain(n)
		}
		now := q.clock.Now()
		wait := q.cfg.poll
		if err == nil && !next.IsZero() {
			wait = max(0, min(wait, next.Sub(now)))
		}
		at := now.Add(wait)
		q.wakeMu.Lock()
		q.wakeAt = at
		q.wakeMu.Unlock()
		if q.cfg.hooks.beforeSleep != nil {
			q.cfg.hooks.beforeSleep(at)
		}
		t := q.clock.TimerAt(at)
		select {
		case <-q.ctx.Done():
			t.Stop()
			return
		case <-q.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// drain claims and settles due entries, shard by shard, each until a claim
// comes back short of a full batch. It returns how many entries it settled
// and when, by the local clock, the earliest entry left comes due by the
// server's (zero when none is left): the server's distance to it, from when
// the claim was sent.
func (q *Queue) drain(ctx context.Context) (n int, localNext time.Time, err error) {
	q.mu.Lock()
	first := q.shardTurn
	q.shardTurn++
	q.mu.Unlock()
	for i := range q.shards {
		shard := (first + i) % len(q.shards)
		got, next, err := q.drainShard(ctx, shard)
		n += got
		if err != nil {
			return n, localNext, err
		}
		if !next.IsZero() && (localNext.IsZero() || next.Before(localNext)) {
			localNext = next
		}
	}
	return n, localNext, nil
}

// drainShard is drain for one shard.
func (q *Queue) drainShard(ctx context.Context, shard int) (n int, localNext time.Time, err error) {
	for ctx.Err() == nil {
		targets := q.snapshot()
		if len(targets) == 0 {
			return n, localNext, nil
		}
		sent := q.clock.Now()
		token := newID()
		cctx, cancel := context.WithTimeout(ctx, q.cfg.timeout)
		got, now, next, err := q.claim(cctx, shard, targets, token)
		cancel()
		if err != nil {
			return n, localNext, err
		}
		if len(got) > 0 && q.cfg.hooks.afterClaim != nil {
			ids := make([]string, len(got))
			for i, c := range got {
				ids[i] = c.id
			}
			q.cfg.hooks.afterClaim(ids)
		}
		// One delete call per target for the whole batch.
		var order []*Target
		byTarget := make(map[*Target][]claimed)
		for _, c := range got {
			if _, ok := byTarget[c.target]; !ok {
				order = append(order, c.target)
			}
			byTarget[c.target] = append(byTarget[c.target], c)
		}
		for _, t := range order {
			if at := q.settle(ctx, t, shard, token, now, byTarget[t]); !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		localNext = time.Time{}
		if !next.IsZero() {
			localNext = sent.Add(max(0, next.Sub(now)))
		}
		n += len(got)
		if len(got) < q.cfg.batch {
			return n, localNext, nil
		}
	}
	return n, localNext, ctx.Err()
}
