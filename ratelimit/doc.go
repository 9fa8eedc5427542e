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
// of the budget (1/instances, WithInstances), so an outage narrows the gate
// instead of opening it. The failure is returned with that decision (the
// cache reports it) and counted; for the next second (WithRetryAfter) the
// local buckets decide alone, so a dead Redis is not asked on every read,
// then Redis is tried again. The local buckets are bounded in number
// (WithMaxKeys): past the bound they are dropped and start full again.
//
// The module is separate from cacheguard's core so that the core does not
// depend on redis_rate or golang.org/x/time.
package ratelimit
