// Package cache is a read-through cache in front of a slow source of truth,
// usually a SQL database, that keeps the classic cache failures away from it.
//
// A Cache[V] wraps a repository's Get: Get(ctx, key, load) answers from Redis
// when it can and calls load when it must. Each entry is one Redis string key
// (prefix + key; after a Clear, prefix, generation and key: see Clear below)
// holding either an envelope (a small header and the encoded value, or a null
// marker for a row that does not exist) or a lease placeholder. A caller that misses writes the placeholder with SET NX GET PX;
// whoever gets it loads and fills through a compare-and-set script that writes
// only while the key still holds its own placeholder. Everyone else waits
// for that fill: in this process by joining the read already under way (all
// concurrent Gets and GetManys of a key share one GET, one lease attempt and
// one load), in other processes by subscribing to the key's fill channel and
// marking the placeholder, so that the fill wakes them when it lands (with a
// slow poll as the fallback for a lost message).
// Delete and Set replace the key outright, so a fill that loaded before them
// is refused and cannot write a stale value back.
//
//	users, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"), cache.WithTTL(10*time.Minute))
//	u, err := users.Get(ctx, id, repo.FindUser) // FindUser returns cache.ErrNotFound for a missing row
//	err = users.Delete(ctx, id)                 // after the row changed
//
// What depends on the value type (tags, a TTL function, a store of your own
// for the local tier) is given in Values[V], which the compiler checks;
// everything else is an option (With...), and the only one New requires is
// WithPrefix, which names the cache's keys in Redis.
//
// What that buys, failure by failure:
//
//   - Breakdown (a hot key expires and thousands reload it): one load per key
//     across all processes; the lease is extended while a slow loader runs,
//     and a holder that dies loses its lease after one lease period.
//     Optionally (WithEarlyRefresh) a hot key is reloaded shortly before it
//     expires.
//   - Penetration (requests for rows that exist nowhere): absences are cached
//     with a short, jittered TTL; a Bloom filter (WithBloom) answers most of
//     them without touching Redis at all.
//   - Avalanche (many keys expire together): every TTL is jittered
//     (WithJitter), so keys filled together expire spread out.
//   - Inconsistency (a slow reader writes an old value back after a writer's
//     delete): refused by the lease, whatever the timing.
//
// # Staleness of the local tier
//
// With a local tier (WithLocal), a hot key is answered from process memory,
// and other instances' writes reach it by pub/sub, which delivers at most
// once. The bound, with T the local TTL plus its jitter (WithLocalTTL, 1 s +
// 10 % by default) and H the health check's interval plus its timeout
// (WithInvalidationHealthCheck, 1 s + 1 s by default):
//
//   - A local entry is served as fresh for at most T after it was read from
//     Redis, so it is never served stale for longer than T after the write
//     that replaced it, whatever happens to pub/sub, to the writer or to the
//     network.
//   - Once the write's invalidation has reached Redis (it is sent detached
//     from the writer's context and retried for up to 2 s), an instance stops
//     serving the old value within min(T, H) even if its subscriber's
//     connection died silently: the tier is served only while the last
//     health PING, sent at most H ago, has been answered, and that reply
//     proves every earlier message arrived. Normally it takes one pub/sub
//     delivery (well under a millisecond on a LAN).
//   - On a cluster a PING's reply counts only from the channel's master,
//     where writers publish: the subscriber subscribes through the node its
//     client takes for the master and asks that node's ROLE when the
//     subscription is confirmed and after every PING; a replica (after a
//     failover, say) ends the session, and it subscribes again. The Redis
//     user needs +role; if ROLE is refused the session goes on unchecked
//     (reported). An old master cut off from its cluster still answers
//     "master" until its node timeout: T covers that case.
//   - Under Sentinel (redis.NewFailoverClient) the same check runs on the
//     node the subscription sits on, and after every PING the subscriber
//     also asks which node the Sentinels name master now. After a planned
//     failover (SENTINEL FAILOVER) the demoted master goes on answering
//     PINGs, and ROLE as a master, for seconds; the subscriber finds out at
//     its next health check, takes the tier down (as after a lost message)
//     and subscribes on the promoted master, which clears the tier. So the
//     bound min(T, H) holds across a planned failover and a killed master,
//     for writes the promoted master has. A write the demoted master
//     acknowledged after the promotion is lost by Redis itself (replication
//     is asynchronous): no cache can keep a reader from the row it restores.
//   - A cluster client that reads replicas (ReadOnly, RouteByLatency,
//     RouteRandomly) may read a value that a replica has not yet seen
//     replaced, so with one the tier admits nothing a GET or MGET returned,
//     only what a fill loaded or found on the master. A Sentinel client
//     reading replicas (ReplicaOnly) is not recognised: give the Cache a
//     client of the master.
//   - While Redis fails for this instance, an entry past T may still answer
//     for up to WithLocalStale more (10 s by default; 0 turns it off), counted
//     in Stats.StaleServed: availability traded knowingly for staleness.
//     An entry admitted before the tier's last clear is never served.
//
// Every reconnection of the subscriber, every gap in a publisher's sequence
// numbers and every undecodable message clears the local tier; Stats reports
// them (SubscriptionDowns, InvalidationGaps, InvalidationDecodeErrors) with
// the publish-to-apply lag. The coarse clock the tier reads adds up to a
// millisecond to each bound, and holds it when the process was frozen
// (SIGSTOP, a GC pause, a VM migration): the clock's ticker stores the real
// time, and one read in 128 checks the clock against the real one, so a
// resumed process serves nothing past its bound once it has read for about
// a millisecond (none in a millisecond's reads, with GOMAXPROCS 1 and 2, in
// TestFrozenInstanceServesNothingPastTheBound; the hit costs ×1.22-1.24 of
// a ristretto Get, paired, against ×1.19-1.20 before the check).
//
// # Local stores
//
// The local tier keeps its entries in a LocalStore sized in bytes (an entry
// costs its encoded value, its key and 64 bytes). WithLocal picks otter v2,
// the default; WithLocalRistretto picks ristretto v2; Values.LocalStore plugs
// in a store of your own, which package localstoretest checks against the
// contract. The bounds above hold with any of them. Otter is the default
// because it does less on the paths that matter (figures from
// benchmarks/RESULTS.md, 2 cores):
//
//   - A local hit takes no lock: 74 ns per Get against 134 ns with
//     ristretto, 91 ns against 225 ns from parallel goroutines. The
//     ristretto store takes a read lock on every call, against its Close.
//   - It runs no goroutine and a Set is visible when it returns. Ristretto
//     stores a new key on a goroutine of its own (two per store, ended by
//     Close), so a value just read is served from memory a moment later,
//     and every Del (each write or invalidation of a key the tier holds)
//     waits for that goroutine, so that no value from before it can land
//     after it.
//   - It keeps more hits in the same room: 72.6 % against 68.8 % with 1,000
//     entries, 85.8 % against 84.5 % with 10,000, on a zipfian trace
//     (s = 1.1 over 100,000 rows; the best possible is 75.1 and 89.0 %).
//
// Ristretto also allocates its frequency counters up front, 10 per expected
// entry of 256 bytes (at least 1,000 and at most 4M entries expected), about
// 3 bytes each. Pick it where ristretto is the store your services already
// run and tune; otherwise keep WithLocal.
//
// # Clear
//
// Clear empties the cache for every instance and local tier in O(1): it
// moves the cache to a new generation, one integer under one Redis key, and
// every key of the cache is derived from it (clear.go; a cache never
// cleared keeps the plain prefix + key layout). The new generation is
// announced on the invalidation channel, and every instance also syncs with
// the key every health interval, so an instance learns a Clear within H
// even when it cannot hear the channel. That sync runs once per process and
// go-redis client for all its caches (one EVALSHA whose one MGET reads
// every cache's generation key, on one connection shared by them): what a
// process costs Redis while idle does not grow with its caches
// (docs/scale.md, "Idle cost"). Generations
// are never reused: a new one is at least the Redis server's clock in
// microseconds, so a Clear works after a FLUSHALL or a restart without
// persistence as before it. When Redis forgets the generation (those, or a
// failover to a replica that missed it), the next sync of an instance that
// had one moves every instance to a new one (reported through the logger
// and the error handler), which costs one load per key as a Clear does, so
// instances started before the loss and after it agree again within H of it
// (2H for one that cannot hear the channel either), and a Delete by either
// reaches the other from then on. After a Clear, each entry's key is 18
// bytes longer (the generation and two marks). The scripts that make a
// generation call TIME: the Redis user needs +time besides the scripting
// commands.
//
// The subscription needs the Redis user's permission on the cache's
// channels (docs/acl.md lists every command, key pattern and channel, per
// topology). A user without it, such as one created with
// "ACL SETUSER app on >pw ~* +@all" (Redis 7 grants no channel by default),
// has its subscription refused. New does not fail: the refusal is reported
// as ErrSubscriptionRefused through the logger and the error handler and
// counted in Stats.SubscriptionRefusals, and the cache runs degraded with
// every bound above kept: the local tier serves nothing (every read goes to
// Redis, so Delete, Set and InvalidateTags are seen at once), a Clear made
// elsewhere reaches the instance by its sync within H, and a caller waiting
// for another process's fill polls for it instead of being woken.
//
// # Tags
//
// Values.Tags tags each entry with what a function returns for its key and
// value; InvalidateTags(ctx, tags...) makes every entry of those tags a miss
// for every instance and local tier, in O(number of tags): each tagged entry
// records its tags and when its load started, each tag's last invalidation
// time is one Redis key that grows with every invalidation, and a read
// compares the two (one more round trip for a tagged Redis hit, none where an
// instance with a local tier already knows the times; an untagged entry
// costs nothing more). A fill that loaded before the invalidation lands
// already invalid. The reader that finds an entry invalidated has read the
// tag's time: it reloads under the lease, as after a Delete, and its fill
// records that time, so the new entry is valid for that invalidation and
// invalid for any later one, with no clock involved. An invalidation thus
// costs at most one more load per key across the fleet. Entries whose
// loader read no tag time (a load of a missing key, a Set, an early
// refresh) are compared by the clocks instead: the instances' wall clocks
// must agree within 100 ms, and such an entry created within that margin
// after an invalidation counts as invalidated too (its reload records the
// time). See values.go for the model and the limits (64 tags of at most 256
// bytes per entry).
//
// # Writes made outside cacheguard (WithTracking)
//
// Messages of cacheguard's own reach the local tier only for writes made
// through a Cache. WithTracking adds Redis's server-assisted invalidation:
// the shared pub/sub connection on every master is armed with CLIENT
// TRACKING in broadcasting mode for the prefix, redirected to itself and
// subscribed to __redis__:invalidate, so any change to a key under the
// prefix (a SET from another service or redis-cli, a script, an expiry, an
// eviction) drops it from the tier, and a FLUSHALL or FLUSHDB clears the
// tier. The bound is the one above, for every writer: once a write is on
// its master, the tier stops serving the old value within min(T, H), the
// health check now running on every master's connection. A connection
// lost, a failover, a new master not armed yet or an arming refused takes
// the tier off until every master is armed again, and clears it then
// (Stats.TrackingDowns; Stats.TrackingInvalidations and TrackingFlushes
// count what Redis sent). Redis tells of every change under the prefix,
// fills and leases included, so each instance's own fill drops the entry it
// fills (the next read admits it from Redis), and a read in flight during
// any change does not admit what it read: the price of hearing everyone.
//
// go-redis v9.22+ has a client-side cache of its own
// (Options.ClientSideCacheConfig): it keeps the replies of read commands
// such as GET, on a standalone client speaking RESP3, with the server
// tracking the keys each connection read and MaxStaleness as the hard
// bound; neither a cluster nor a Sentinel failover client has it (their
// options lack the field), and it caches replies, not decoded values, with
// no admission policy. WithTracking keeps decoded
// values of hot keys only, runs on a single node, under Sentinel and on a
// cluster (every master, re-armed after a failover or a slot moved to a new
// master), speaks RESP2 on its one connection per master whatever the
// client speaks, and keeps the lease and fill rules of the tiers below. Use
// one or the other for a key space, not both.
//
// Values handed out may be shared: callers of one load get the same value,
// and a local-tier hit returns the stored one. Treat them as read-only (copy
// a slice, map or pointed-to struct before changing it).
//
// Values of type string and []byte are stored as they are; other types go
// through a Codec (JSON by default). Bytes under a key that are not an
// envelope this package wrote are treated as a miss and overwritten, never
// decoded into garbage.
//
// When Redis fails, Get returns an error wrapping ErrRedis and does not call
// the loader, so an outage of Redis is not turned into an unbounded load on
// the database. Every Redis call is bounded by the client's own read and
// write timeouts. The reads of Get and GetMany, writes (Set, Delete,
// MarkStale, DeleteKeepingVersion, the versioned writes) and lease
// extensions and releases return by their deadline on any client, a call
// that outlives it finishing on a goroutine of its own that Close waits for; set
// ContextTimeoutEnabled on the go-redis client so that context deadlines
// also bound the socket reads of every other call.
//
// The client may be a *redis.Client, a *redis.ClusterClient, a failover client
// or a ring: every script on an entry touches one key (a cache's tag times
// share one slot: tags.go), and batch calls are pipelined per node, so all
// of it works on a Redis Cluster without hash tags. Under
// Sentinel every feature works as on a single node (leases, fills and their
// notifications, versioned writes, Bloom filters, the local tier with the
// bound above), the failover client following the master; a lease or fill
// that was in flight on the demoted master during a failover may be lost
// with the writes Redis loses, which costs a reload, never a stale fill.
// Where Redis kept a lease and lost the fill that replaced it, the cache
// that took the lease takes it over at its next read of the key; other
// instances wait for it as for a holder that died, at most the lease
// (WithFillLease).
//
// Pub/sub runs on one connection per Redis node per go-redis client, shared
// by every Cache and lock Client built on that client: invalidations, fill
// notifications and lock release notifications, one health check and one
// resubscription policy for all (see internal/pubsub).
//
// # Inside
//
// A Cache is a thin facade (this package: the API, the options, Stats and
// the Observer) over components, each a package of cache/internal that
// imports only those listed before it:
//
//   - errs, hook, life, telemetry: the sentinel errors, the tests' hook
//     set, the background work Close waits for, and the one seam the
//     counters, the reports and the Observer's marks go through;
//   - transport: every command to Redis, its circuit breaker, the per-node
//     queues that make concurrent commands share round trips, scripts by
//     SHA;
//   - entry: the bytes of an entry (codec, compression, envelope, TTLs and
//     their floor, tags) and what a read makes of them;
//   - bus and generation: the invalidation channel, and the key naming with
//     the generation Clear moves;
//   - local: the local tier, its stores, its trust and its tracking;
//   - flight and lease: coalescing the reads of a key in this process, and
//     the lease protocol across processes with its fill notifications;
//   - engine: Get and GetMany from the local tier to the decoded value, and
//     the per-key state machine of a miss;
//   - write: every write of keys, tags and versions.
//
// Over TLS everything above holds as without it, on every topology: the
// connections the package makes itself (the subscriber's, tracking's, the
// ROLE check's) take the client's options, its TLSConfig, credentials and
// Dialer, and under Sentinel go through the failover client's dialer, which
// asks the Sentinels with the client's TLS settings and Sentinel
// credentials (TestTLS: servers that accept TLS only, a single node, a
// cluster and Sentinel, across failovers).
package cache
