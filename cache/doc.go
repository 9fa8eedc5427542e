// Package cache is a read-through cache in front of a slow source of truth,
// usually a SQL database, with Redis as the tier every instance shares and,
// optionally, a tier in process memory. It keeps the classic cache failures
// away from the database: a hot key that expires (one load per key across
// every process, the others wait for its fill), rows that exist nowhere
// (absences cached, a Bloom filter before them), keys that expire together
// (jittered TTLs), and an old value written back after a change (fills
// guarded by a lease in Redis, refused once a write replaced the key).
//
//	users, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"), cache.WithTTL(10*time.Minute))
//	if err != nil {
//		return err
//	}
//	defer users.Close()
//	u, err := users.Get(ctx, id, repo.FindUser) // FindUser returns cache.ErrNotFound for a missing row
//	err = users.Delete(ctx, id)                 // after the row changed
//
// What every user must know:
//
//   - One prefix per cache (WithPrefix, the one option New requires): it
//     names the cache's keys and channels in Redis. Two caches must not
//     share one.
//   - Values handed out may be shared, between the callers of one load and
//     with the local tier: treat them as read-only.
//   - A loader answers ErrNotFound for a row that does not exist; the absence
//     is cached for the null TTL (WithNullTTL) like a value, until a write
//     of the key (Set, Delete, Inserted).
//   - When Redis fails, Get returns an error wrapping ErrRedis and does not
//     call the loader, so an outage of Redis is not turned into a load on
//     the database (WithFallbackLoads lets a bounded number through).
//   - New sends nothing to Redis; Ready(ctx) waits for it under your
//     deadline, for a service that wants to fail fast at start. Every call
//     returns by its context's deadline, on any client; Close waits for what
//     is left, at most WithCloseTimeout.
//   - The client is any redis.UniversalClient: a single node, a failover
//     client (Sentinel), a cluster (no hash tags needed) or a ring.
//
// Writes: Set or Delete after the source changed; SetVersioned,
// DeleteVersioned and DeleteKeepingVersion where writers race; MarkStale to
// serve the old value while one caller reloads; InvalidateTags for the tags
// of Values.Tags; Clear for the whole cache; Inserted for new rows behind a
// Bloom filter. Stats counts what happened; WithObserver traces it.
//
// Options, by what they are for (each is documented on its function):
//
//   - Keys and values: WithPrefix, WithTTL, WithNullTTL, WithJitter,
//     WithCodec, WithCompression, WithMaxValueSize.
//   - Loads and the callers who wait for them: WithLoadTimeout,
//     WithSoftLoadTimeout, WithFillLease, WithWait, WithLoadOnWaitTimeout,
//     WithMaxLoads, WithKeyRateLimit, WithEarlyRefresh.
//   - Rows that do not exist: WithBloom, WithBloomOnMiss.
//   - The local tier: WithLocal (otter), WithLocalRistretto, WithLocalTTL,
//     WithLocalAdmitAll, WithHotKeys, WithLocalStale, WithTracking.
//   - Invalidation across instances: WithInvalidationChannel,
//     WithInvalidationHealthCheck.
//   - Reads that outgrow one node: WithHotKeyCopies (a hot key's reads
//     spread over copies on other cluster masters), WithReplicaReads (a
//     client that reads replicas, its writes waiting for them).
//   - When Redis fails: WithCircuitBreaker, WithFallbackLoads.
//   - Reporting and shutdown: WithLogger, WithLogInterval,
//     WithErrorHandler, WithObserver, WithCloseTimeout.
//
// The local tier's bound: a local entry is never served stale for longer
// than the local TTL T after the write that replaced it, whatever happens
// to pub/sub; once the write's invalidation has reached Redis, every
// instance stops serving the old value within min(T, H), H the health
// check's interval plus its timeout, and normally within one pub/sub
// delivery.
//
// Further reading, in the repository: docs/cache.md for the model (the
// lease, fills and their notifications), the local tier's bounds and how
// they are kept across failovers, freezes and lost messages, the local
// stores, Clear and its generations, tags, WithTracking, the topologies,
// TLS and the components inside; docs/acl.md for the Redis permissions of
// every feature; docs/scale.md for what a process costs Redis, idle and at
// scale, hot-key copies and replica reads.
package cache
