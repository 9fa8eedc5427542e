// Package hook is the set of interleaving points the cache's tests pin
// races with. Every component is given the same *Set, nil in production,
// and calls only the hooks of its own steps; a nil hook is skipped.
package hook

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Set holds the hooks; each names the component that calls it.
type Set struct {
	// The read engine.
	AfterLoad   func(key string)                     // the loader returned, before the fill
	OnLeaseWait func(key string)                     // another holder's placeholder was seen
	OnRefresh   func(key string)                     // an early refresh started
	Rand        func() float64                       // early-refresh dice
	OnFill      func(key string, ok bool)            // a fill (or refresh fill) ran
	OnLoadWait  func()                               // a load waits for a slot under WithMaxLoads
	OnJoin      func(key string)                     // a call joined another's read of key
	OnWake      func(key string, notified bool)      // a lease waiter woke: by a fill message, or to poll
	OnExtend    func(key string, ok bool, err error) // a lease extension ran (err: no answer, retrying)

	// Lease waits (fill notifications).
	NotifiedPoll time.Duration    // replaces the notified poll interval when > 0
	NoFillNotify bool             // waiters poll only, as before fill messages
	OnWaitMarked func(key string) // a waiter marked key's placeholder

	// The entry format: the clock of expiry decisions.
	Now func() time.Time

	// The local tier and its subscriber side.
	OnSubscribed   func()              // the invalidation subscription is (back) up
	OnNotMaster    func()              // the subscription's node answered ROLE with another role
	BeforeRole     func()              // the subscriber is about to ask its node's ROLE
	OnInvalidate   func(keys []string) // another instance's invalidation was applied
	BeforeLocalSet func(key string)    // an admission passed its check, holding key's stripe lock
	OnTrack        func(keys []string) // a tracking invalidation was applied (nil: a flush)
	OnTracking     func(up bool)       // tracking came up on every master, or went down

	// Generations.
	OnGeneration func(gen uint64) // the cache moved to a new generation

	// The transport.
	ReadVia redis.Cmdable // sends the engine's GETs in place of its read queues
	// BatchReads adds a batch's queued GETs to pipe in a shape of its own;
	// replied puts the replies into them once pipe has run (an MGET,
	// measured in BenchmarkReadTransport).
	BatchReads func(ctx context.Context, pipe redis.Pipeliner, gets []redis.Cmder) (replied func())
}

// Clock is the Now hook's time, or time.Now() without it.
func (s *Set) Clock() time.Time {
	if s != nil && s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
