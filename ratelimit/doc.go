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
// second (r the budget's rate per second) and admits an operation when it
// holds a whole one. It starts each outage with its share of the burst, b/n,
// never more, so the n instances admit at most b + r·t in the t after the
// outage began, as the shared limiter would have, however small the budget.
// With 20 instances sharing 2 a second with bursts of 2, each starts with at
// most a tenth of a token and admits its first operation 9 to 19 seconds
// into the outage: the fleet admits nothing in the outage's first second
// (the shared limiter would have admitted up to 4), and at least 100 in its
// first minute (the shared limiter: up to 122). A share of the burst under
// one token starts lower by a random fraction of a token (up to a whole
// one), so that the instances reach their whole tokens at moments spread
// over the ten seconds a bucket takes to gain one, rather than all at once;
// a bucket holds at most its share of the burst, or one token if that is
// less (else it could never admit). Over any interval of length t the fleet
// thus admits at most b + r·t when n ≤ b, and at most n + r·t when n > b
// (each instance's one token, should they line up).
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
