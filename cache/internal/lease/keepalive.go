package lease

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// While runs fn while a goroutine keeps the leases alive, and returns
// once both have finished.
func (ls *Leases) While(ctx context.Context, leases []Lease, fn func()) {
	stop := make(chan struct{})
	alive := make(chan struct{})
	go func() {
		defer close(alive)
		ls.keepAlive(ctx, leases, stop)
	}()
	fn()
	close(stop)
	<-alive
}

// keepAlive extends the leases every lease/3, in one pipeline, until stop is
// closed or none of them is held any more: a lease found deleted or
// overwritten is dropped, since its fill will be refused anyway.
//
// A failed extension (an error, or no reply within a period) loses nothing
// yet: the lease still has two periods to run. So an attempt is given up
// after one period, leaving time to try again, and after a failure the next
// attempt comes at once (then every period/8), until one succeeds or the
// script says the lease is no longer ours. Waiting for the client's read
// timeout (3 s by default, longer than a lease) or for the next period would
// let a transient fault expire the lease under a live loader, and another
// process would load too. The attempt's deadline bounds a silent connection
// on any client: on one without ContextTimeoutEnabled the attempt is left
// to finish on a goroutine of its own (internal/call) and the next one goes
// out on another connection.
func (ls *Leases) keepAlive(ctx context.Context, leases []Lease, stop <-chan struct{}) {
	period := ls.ttl / 3
	retry := max(period/8, time.Millisecond)
	// The period bounds each attempt even where the client's own timeouts
	// would end it later (Strict).
	bound := ls.redis.Calls().Strict()
	t := time.NewTimer(period)
	defer t.Stop()
	leases = slices.Clone(leases)
	for len(leases) > 0 {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		calls := make([]script.Call, len(leases))
		for i, l := range leases {
			calls[i] = script.Call{Script: ExtendScript, Keys: []string{l.Key}, Args: []any{l.ph, entry.PX(ls.ttl)}}
		}
		cmds, err := call.Do(bound, ctx, period, func(ctx context.Context) ([]*redis.Cmd, error) {
			return script.Run(ctx, ls.redis.Client(), calls)
		}, nil)
		if err != nil && ctx.Err() == nil {
			ls.rec.Report(telemetry.LeaseExtend, leases[0].Key, ls.redis.Error(leases[0].Key, "extend lease", fmt.Errorf("%w (retrying)", err)))
		}
		held, failed := leases[:0], false
		for i, l := range leases {
			ok, err := false, err // abandoned (no cmds): every outcome unknown
			if cmds != nil {
				var n int
				n, err = cmds[i].Int()
				ok = err == nil && n == 1
			}
			if ls.hooks != nil && ls.hooks.OnExtend != nil {
				ls.hooks.OnExtend(l.Key, ok, err)
			}
			if err != nil { // not known lost: try again soon
				failed = true
			}
			if ok || err != nil {
				held = append(held, l)
			}
		}
		leases = held
		if failed {
			t.Reset(retry)
		} else {
			t.Reset(period)
		}
	}
}
