package cache

// Server-assisted invalidation (WithTracking). Redis itself tells the local
// tier of every change to a key under the prefix, whoever makes it: the
// client's shared pub/sub connection on every master is armed with CLIENT
// TRACKING in broadcasting mode for the prefix and redirects to itself
// (internal/pubsub, track.go). What arrives on __redis__:invalidate drops the
// keys as another instance's message does; a flush clears the tier.
//
// Tracking gates the tier like the invalidation subscription: the tier is
// trusted only until the older of the two sources' last proofs plus H (a
// reply to a health PING on every master, or the session's start), so a
// master whose connection died silently, a master not armed yet (after a
// failover, or a slot moved to a new master) or a failed arming stops the
// tier serving within H; every time tracking comes back up on every master
// the tier is cleared first, so nothing that may have missed a change
// survives a gap.

// WithTracking has Redis invalidate the local tier too (it needs one): every
// change to a key under the prefix on any master, made by anyone (another
// service, redis-cli, a script), an expiry, an eviction or a flush, drops it
// from this instance's local tier within the bound of the package comment
// (docs/cache.md, "Staleness of the local tier"),
// not only writes made through a Cache. It needs a *redis.Client, a failover
// client or a *redis.ClusterClient (New refuses a Ring), Redis 6.0 or later,
// and a Redis user allowed CLIENT TRACKING and CLIENT ID (refused, the tier
// serves nothing from memory and the refusal is reported to the logger and
// the error handler). A cache without it opens no connection and sends no
// command for it.
func WithTracking() Option { return func(c *config) { c.local.tracking = true } }
