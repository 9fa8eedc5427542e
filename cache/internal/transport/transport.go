// Package transport is the cache's way to Redis: every command a cache
// sends goes through a Redis value, which bounds it by its caller's
// context on any client (internal/call), lets it past the circuit breaker
// or not, queues the single-key commands per node so that concurrent
// callers share round trips (queue.go), runs scripts by SHA with the one
// NOSCRIPT fallback (internal/script), and turns a failure into an error
// wrapping ErrRedis, counted.
package transport

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// Redis is one cache's transport. Make it with New.
type Redis struct {
	rdb redis.UniversalClient
	// calls bounds the Redis calls that must end by the caller's context
	// or a timeout of their own on any client; flight counts those left
	// running at their deadline, for Close.
	calls  call.Bound
	flight *call.Flight
	queues readQueues // per-node queues of single-key commands (queue.go)
	widest int        // the widest a queue of reads grows (width.go)

	br *breaker // nil when off (breaker.go)

	rec   *telemetry.Recorder
	hooks *hook.Set
	// sharded: a cluster client, whose channels are shard channels.
	sharded bool
	// replicaReads: the client may send reads to replicas (a cluster
	// client with ReadOnly, RouteByLatency or RouteRandomly).
	replicaReads bool
}

// New returns the transport over rdb.
func New(rdb redis.UniversalClient, br Breaker, rec *telemetry.Recorder, hooks *hook.Set) *Redis {
	r := &Redis{rdb: rdb, flight: new(call.Flight), rec: rec, hooks: hooks, widest: widest(rdb)}
	r.calls = call.For(rdb).Counting(r.flight)
	_, r.sharded = rdb.(*redis.ClusterClient)
	r.replicaReads = ReadsReplicas(rdb)
	r.br = newBreaker(br, rec)
	return r
}

// Client is the go-redis client commands go through.
func (r *Redis) Client() redis.UniversalClient { return r.rdb }

// Calls bounds a call by its caller's context on any client, counted for
// Close (internal/call).
func (r *Redis) Calls() call.Bound { return r.calls }

// Sharded reports a cluster client, whose channels are shard channels.
func (r *Redis) Sharded() bool { return r.sharded }

// ReplicaReads reports a client that may read from replicas: what a GET
// returns may lag the master, where invalidations are published.
func (r *Redis) ReplicaReads() bool { return r.replicaReads }

// Stop makes calls left running at their deadline, and batches of queued
// commands, run on their callers' goroutines from now on; Wait waits for
// those already running, at most d (Close).
func (r *Redis) Stop() { r.flight.Stop() }

// Wait is Stop's second half; false if calls were still running after d.
func (r *Redis) Wait(d time.Duration) bool { return r.flight.Wait(d) }

// Error counts err and returns it wrapped in ErrRedis, naming op and key. A
// context error is returned as it is, so errors.Is(err, context.Canceled)
// keeps working.
func (r *Redis) Error(key, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	r.rec.RedisErrors.Add(1)
	r.reloadTopology(err)
	return kind.Errorf("%w: %s %q: %w", errs.ErrRedis, op, key, err)
}

// reloadTopology asks a cluster client to reload its slot map after a
// failure that may mean the topology changed. go-redis reloads it by itself
// only on MOVED/ASK replies and every ClusterStateReloadInterval (60 s by
// default): after a master dies, a client whose traffic goes to that master's
// slots would otherwise keep dialling the dead node until the interval runs
// out, long after its replica took over. The reload is lazy and coalesced by
// go-redis (one at a time, 200 ms apart), so calling it on every failure
// costs at most a few CLUSTER SLOTS a second.
func (r *Redis) reloadTopology(err error) {
	cc, ok := r.rdb.(*redis.ClusterClient)
	if !ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) && !redis.HasErrorPrefix(err, "CLUSTERDOWN") {
		return // the server answered: the node is alive and owns the slot
	}
	cc.ReloadState(context.Background())
}

// Allow asks the circuit breaker for a Redis call about key; done must be
// called with the call's error. An open breaker refuses it with an error
// matching ErrRedis and ErrCircuitOpen.
func (r *Redis) Allow(key string) (done func(error), err error) { return r.br.allow(key) }

// BreakerState is the breaker's state (closed without one).
func (r *Redis) BreakerState() gobreaker.State { return r.br.state() }

// Suspect reports whether calls go through the breaker: a failure was
// reported since it was last healthy (tests).
func (r *Redis) Suspect() bool { return r.br.suspect() }

// Counts are the breaker's counts (tests).
func (r *Redis) Counts() gobreaker.Counts { return r.br.counts() }
