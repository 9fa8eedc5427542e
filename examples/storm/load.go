package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// errShed marks a request that was never sent because too many were already
// in flight: the client itself was overloaded.
var errShed = errors.New("too many requests in flight")

// load is an open-loop read load: requests arrive at a fixed rate whether or
// not earlier ones have finished, as users' requests do. A closed loop (each
// worker waiting for its previous answer) would slow down exactly when the
// database struggles and hide the storm. The dispatcher wakes every
// millisecond and sends what has come due; a request's latency is measured
// from then.
type load struct {
	rate     float64       // requests per second
	duration time.Duration // how long requests keep arriving
	inFlight int           // more requests than this at once are shed
	timeout  time.Duration // each request's deadline
	// key picks the key of the next request; it runs on the dispatching
	// goroutine only, so it may use the generator it is given.
	key func(r *rand.Rand) string
}

// op is one request of a load.
type op func(ctx context.Context, key string) error

// total is the number of requests the load sends.
func (l load) total() int64 { return int64(l.rate * l.duration.Seconds()) }

// run sends the load through do, records every request on m, and returns
// once every request it started has finished. It stops early when ctx ends.
func (l load) run(ctx context.Context, m *meter, seed uint64, do op) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	slots := make(chan struct{}, max(l.inFlight, 1))
	var wg sync.WaitGroup
	defer wg.Wait()

	origin := time.Now()
	total := l.total()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for issued := int64(0); issued < total; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		due := min(total, int64(l.rate*now.Sub(origin).Seconds()))
		for ; issued < due; issued++ {
			key := l.key(rng)
			select {
			case slots <- struct{}{}:
			default:
				m.requests.Add(1)
				m.fail(errorKind(errShed))
				if i := m.at(now); i >= 0 {
					m.failedAt[i].Add(1)
				}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				rctx, cancel := context.WithDeadline(ctx, now.Add(l.timeout))
				err := do(rctx, key)
				cancel()
				m.done(now, err)
			}()
		}
	}
}
