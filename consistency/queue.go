package consistency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/redis/go-redis/v9"
)

// Queue is a durable queue of cache deletes in Redis, drained by a background
// worker in every instance that runs one. Deletes are grouped by target (a
// named Invalidator, see Register), so that an entry recorded by one process
// can be carried out by another after a restart. It is safe for concurrent
// use. Create it with New and stop it with Close.
type Queue struct {
	rdb    redis.UniversalClient
	cfg    config
	log    *slog.Logger
	clock  clock
	shards []layout
	stats  counters

	mu      sync.RWMutex
	targets map[string]*Target
	order   []string // registration order, rotated per claim for fairness
	turn    int
	// shardTurn rotates the shard drain starts with.
	shardTurn int
	closed    bool

	wakeMu sync.Mutex
	wakeAt time.Time // when the sleeping worker will look next
	wake   chan struct{}

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	calls  call.Bound  // how Redis calls are bounded (bounded.go)
	flight call.Flight // calls left running at their deadline
}

// hooks are interleaving points for tests; nil in production.
type hooks struct {
	afterClaim  func(ids []string) // a batch was claimed, before its deletes run
	afterDrain  func(n int)        // one worker pass ended after n entries
	beforeSleep func(at time.Time) // the worker chose when to look next, before its timer is set
}

// New returns a Queue keeping its entries in rdb (any redis.UniversalClient;
// all of the queue's keys share one hash tag, see WithPrefix) and starts
// its worker unless WithoutWorker() is given. It returns an error wrapping
// ErrInvalidOption when an option makes no sense.
func New(rdb redis.UniversalClient, opts ...Option) (*Queue, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	cfg := defaultConfig()
	option.Apply(&cfg, opts)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{
		rdb:     rdb,
		cfg:     cfg,
		log:     option.Logger(cfg.logger),
		clock:   cfg.clock,
		targets: make(map[string]*Target),
		wake:    make(chan struct{}, 1),
	}
	for i := range cfg.shards {
		q.shards = append(q.shards, newLayout(cfg.prefix, i))
	}
	q.calls = call.For(rdb).Counting(&q.flight)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	if cfg.worker {
		q.wg.Add(1)
		go q.run()
	}
	return q, nil
}

// Close stops the worker and waits for it, and for Redis calls left running
// at their deadline (up to the timeout (WithTimeout)). Deletes it interrupts are put
// back, due at once, for another instance; if even that fails, they are
// claimed again after the visibility timeout. Nothing is lost. Close does
// not close the Redis client. Calls after Close return ErrClosed. Close
// returns nil, or an error wrapping context.DeadlineExceeded when calls
// were still running at the timeout (they end by the client's own
// timeouts); a second Close returns nil.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.mu.Unlock()
	q.cancel()
	q.wg.Wait()
	if !q.flight.Wait(q.cfg.timeout) {
		return kind.Errorf("cacheguard: consistency: close: Redis calls still running after %v: %w", q.cfg.timeout, context.DeadlineExceeded)
	}
	return nil
}

func (q *Queue) isClosed() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.closed
}

// Stats returns a snapshot of the counters of this instance.
func (q *Queue) Stats() Stats { return q.stats.snapshot() }

// Pending returns how many deletes of the registered targets are recorded
// and not yet done, due or not (dead letters excluded).
func (q *Queue) Pending(ctx context.Context) (int64, error) {
	ts := q.snapshot()
	if len(ts) == 0 {
		return 0, nil
	}
	cmds, err := q.pipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range ts {
			for _, l := range q.shards {
				p.ZCard(ctx, l.Due(t.name))
			}
		}
		return nil
	})
	if err != nil {
		return 0, q.redisError("pending", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.(*redis.IntCmd).Val()
	}
	return n, nil
}

// snapshot returns the registered targets, starting one further along at
// each call so that a backlog in one target does not starve the others.
func (q *Queue) snapshot() []*Target {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.order)
	out := make([]*Target, 0, n)
	for i := range n {
		out = append(out, q.targets[q.order[(q.turn+i)%n]])
	}
	q.turn++
	return out
}

// backoff is the pause before attempt n+1 after n failed attempts: doubling
// from the minimum, capped, jittered down by up to half.
func (q *Queue) backoff(n int) time.Duration {
	return call.Jitter(call.Step(q.cfg.minBackoff, q.cfg.maxBackoff, n))
}

// redisError counts err and wraps it in ErrRedis; context errors are
// returned as they are.
func (q *Queue) redisError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	q.stats.redisErrors.Add(1)
	return kind.Wrap(ErrRedis, op, err)
}

// report hands an error that no caller sees to the logger and error handler.
func (q *Queue) report(target string, keys []string, err error) {
	q.log.Warn("cacheguard consistency", "target", target, "keys", keys, "err", err)
	if q.cfg.onError != nil {
		q.cfg.onError(&TargetError{Target: target, Keys: slices.Clone(keys), Err: err})
	}
}
