// Package stock sells a limited stock to a crowd (a flash sale) on Redis,
// without overselling, without losing an order on the way to the database,
// and with a way to check and repair the two against each other.
//
// # Pieces and when to use each
//
//   - Inventory.Reserve: the purchase. One Lua script on the buyer's bucket
//     checks the sale window (by the Redis clock), the request id (a retry
//     returns the first answer and deducts nothing), the per-user limit
//     (WithPerUserLimit, 1 by default), deducts, starts the hold timer and
//     appends the reservation to the bucket's outbox stream (XADD). The
//     answer is typed: Reserved, SoldOut, LimitReached, NotOnSale, with
//     Duplicate set on a replayed answer.
//   - Inventory.Confirm / Release: payment, and the return of units
//     (unpaid, cancelled, refunded), each idempotent by request id and
//     written to the outbox too. A reservation not confirmed within
//     WithHoldFor is released by the consumer (a sorted set of due times by
//     the Redis clock), so unpaid stock comes back on its own.
//   - Consumer: drains every sale's outbox into a Sink (SQLStore for
//     database/sql) through a consumer group: XREADGROUP, XACK after the
//     write, XAUTOCLAIM of entries a dead consumer left pending, a
//     dead-letter stream for entries that can never be applied (malformed,
//     refused by the sink with ErrPoison, or failing MaxDeliveries times
//     while the sink accepts others: a database outage dead-letters
//     nothing). Run one or more per deployment; Close stops one between
//     batches.
//   - SQLStore: the order table keyed by (sku, request id), so redelivery is
//     harmless; a release or confirm that arrives before its reservation is
//     parked in the row and completed when the reservation arrives, and the
//     consumer alerts (counter, log) when one waits longer than
//     WithParkAlert.
//   - Inventory.Reconcile / Repair: compare Redis with the database
//     (oversold, undersold, orphan orders, unapplied changes, orders whose
//     units or buyer differ, outbox backlog);
//     rebuild the Redis side from the database. Unload ends a sale once its
//     outbox is drained and deletes its keys.
//   - WithBuckets: spreads one hot SKU over n hash tags, so a cluster's
//     masters share it. Admission: rate limits per SKU and per user in front
//     of Reserve (GCRA in Redis, go-redis/redis_rate), with an in-process
//     fallback while Redis is unreachable. WithLocalSoldOut: a per-process
//     memory of "sold out / ended" that answers without Redis.
//
// # Configuration
//
// New, NewConsumer and NewAdmission take one Option type. Each option says
// what it configures (WithLogger all three; WithPrefix an Inventory and
// an Admission; WithBatchSize and its kind a Consumer; WithSKURate and its
// kind an Admission); a constructor given an option of another returns an
// error wrapping ErrInvalidOption, and a nil Option is ignored. The zero
// configuration works: New(rdb) sells under the prefix "stock" with one
// bucket and one unit per user.
//
// # Redis layout
//
// Every key of one bucket of a sale shares the hash tag {ns:sku:b}: its
// counters, the request records, the per-user counts, the outbox, the hold
// timers and the transfer ids (see keys.go). Each script touches one bucket,
// so everything runs unchanged on a Redis Cluster.
//
// # Buckets
//
// A user's requests always go to the same bucket, their home (a hash of the
// user id): the per-user count and the request records of that user live
// there, so the limit and idempotency hold in one script whatever n is.
// When the home bucket is out of units, the request takes units from every
// other bucket that has them (one pipelined round trip; each move is an
// outbox entry of the giving bucket) and credits them to its home in the
// final attempt; the consumer credits moves whose requester died in
// between, so a move is never lost. SoldOut is answered only after every
// bucket was found empty and, while units were moving between buckets (a
// racing request, or a racing retry of this one, borrowed them), after
// waiting up to 100 ms for them to land and trying again. Only a move that
// takes longer (its requester died and the consumer has not credited it
// yet) can make a SoldOut miss units, and they are sold to the next buyer.
// That wait costs a SoldOut answer one more round trip. Confirm, Release and Lookup find a request by trying the buckets
// in turn. With buckets, request ids must be unique per SKU (not only per
// user).
//
// # Guarantees
//
//   - A deduction exists if and only if its outbox entry does (same script).
//   - A request id is applied at most once, in Redis and in the database.
//   - Units reserved plus sold never exceed the stock loaded; a user never
//     holds more than the limit.
//   - Every outbox entry is applied to the sink at least once, unless it is
//     dead-lettered (counted, logged, kept in the dead-letter stream); the
//     consumer never acknowledges an entry it did not apply or dead-letter.
//
// # Non-guarantees: what a Redis failure costs
//
// Redis is the point of sale. What it loses on a crash depends on its
// persistence:
//
//   - AOF with appendfsync always: nothing. The sale, the reservations and
//     the outbox with its group come back; the consumer resumes, its own
//     pending entries at once (TestRedisRestartMidSale/aof=true,
//     TestOwnPendingResumedAfterAOFRestart).
//   - A failover to a replica (Sentinel, Redis Cluster) that had received
//     every acknowledged write: nothing; buyers retrying under their
//     request ids get their first answers (TestClusterFailoverMidSale).
//     Replication is asynchronous, though: the writes of a master's last
//     instant can be missing on its replica whatever the persistence, and
//     then the next case applies to them.
//   - AOF everysec: up to about a second of reservations, with their outbox
//     entries (never one without the other). The buyers were told
//     "reserved"; the database never hears of them.
//   - No persistence: the sale is gone. Reserve answers NotOnSale;
//     Reconcile shows the database's orders as orphans and the stock as
//     undersold; Repair rebuilds the sale from the database; reservations
//     not yet consumed before the crash are lost (TestRedisRestartMidSale/
//     aof=false). Answers that reserved nothing are forgotten, so a retry of
//     one is decided anew.
//   - A failover to a replica that had not received the last writes: the
//     sale goes on from the replica's older state, which would sell again
//     the units of the lost reservations. Reconcile shows those the consumer
//     had already applied as orphans (the database holds them, Redis does
//     not); Repair rebuilds the sale from the database, after which exactly
//     the units left are sold (TestClusterFailoverToAStaleReplica). Lost
//     reservations not yet consumed are lost on both sides.
//
// Every call takes a context and returns when it ends, on any go-redis
// client: where the client ignores context deadlines while it waits for a
// reply (the default options), the call is handed to a goroutine of its own
// and the caller returns at its deadline with an error matching the
// context's (see bounded.go). Whether such a call ran in Redis is unknown;
// retrying it under the same request id settles it. ContextTimeoutEnabled
// on the client saves the hand-off.
//
// The database is written after the buyer was answered: an order row
// appears within the consumer's latency, not at once. Sinks must be
// idempotent per request id and version. With WithLocalSoldOut, a Local
// answer is not looked up under its request id (see Lookup).
package stock
