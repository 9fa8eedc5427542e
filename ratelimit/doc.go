// Package ratelimit limits, per key, the Redis reads and the database loads of
// a cacheguard cache (cache.WithKeyRateLimit), across every instance that
// shares a Redis.
//
// # Model
//
// A Limiter holds one budget for reads and one for loads (a Limit: so many
// per period, with a burst). Each key has its own budget of each kind. With a
// Redis client the budgets are shared by every instance through the GCRA
// limiter of go-redis/redis_rate: one small Lua script on the key's own Redis
// key, so it runs on any Cluster. Without one (a nil client) each instance
// holds the whole budget for itself, in process.
//
// When Redis cannot answer (an error, or no reply within the timeout) the
// instance falls back to an in-process token bucket per key holding its share
// of the budget, 1/n of its rate and of its burst with n from WithInstances,
// so an outage narrows the gate instead of opening it. The failure is
// returned with that decision (the cache reports it) and counted; for the
// next second (WithRetryAfter) the local buckets decide alone, so a dead
// Redis is not asked on every read, then Redis is tried again.
//
// # The outage share
//
// A share is counted in fractions of a token: a bucket gains r/n tokens a
// second (r the budget's rate per second) up to its share of the burst, b/n
// (one token if that is less), and admits an operation when it holds a
// whole one. It starts each outage with nothing: the failure may be this
// instance's alone, while the others go on spending the shared budget,
// burst included. In an outage of the whole fleet the n instances thus admit
// at most r·t in the t after it began, under the shared limiter's b + r·t;
// with 20 instances sharing 2 a second, each admits its first operation 10
// to 20 seconds into the outage (a share under one token starts lower by a
// random fraction of a token, so that the fleet's first operations spread
// over ten seconds rather than come at once), and the fleet about 100 in its
// first minute (TestOutageShareWithinSharedBudget; the shared limiter: up
// to 122).
//
// # One instance cut off
//
// With n above 1 the instances also count each other (internal/members):
// each beats into one sorted set in Redis, at most every 250 ms, on the
// calls it makes; a beat counts for 750 ms. The instances that reach Redis
// shrink the shared budget to the live instances' shares (the same rate over
// a period n/live times as long, the burst times live/n), so one instance
// cut off from Redis spends its share locally while the others leave room
// for it: the fleet admits at most b + r·t + r·D/n, D (up to a second) the
// time the others take to count it out. Measured with three instances
// sharing 50 + 50/s over 3 s (TestFleetLimitHoldsWhenOneInstanceIsCutOff):
// 199 admitted healthy, 206 with one cut off (before the count, 264). An
// instance that asks nothing for 750 ms is counted out too: while it is idle
// the fleet's budget shrinks by its share, never widens.
//
// n is what WithInstances says, fixed at New: nothing is learned from Redis
// or from the other instances. Left at its default of 1, every instance
// holds the whole budget during an outage and the fleet admits n times it;
// overstating n narrows the gate further, understating it opens it. A
// bucket kept from an earlier outage is cut back to at most its start when
// the next one begins (a failure after Redis answered): it refilled
// meanwhile. The local buckets are bounded in number
// (WithMaxKeys): past the bound they are dropped and start again from their
// share, so an instance with more hot keys in an outage than the bound
// admits more than its share.
//
// The module is separate from cacheguard's core so that the core does not
// depend on redis_rate. Its Stats are exported as OpenTelemetry metrics by
// the package otelratelimit of this module (cacheguard.ratelimit.*), which
// imports only the OpenTelemetry metric API.
package ratelimit
