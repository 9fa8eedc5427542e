// Package stock sells a limited stock to a crowd (a flash sale) on Redis,
// without overselling, without losing an order on the way to the database,
// and with a way to check and repair the two against each other.
//
//	inv, err := stock.New(rdb, stock.WithPrefix("shop:stock:"))
//	if err != nil {
//		return err
//	}
//	res, err := inv.Reserve(ctx, sku, userID, requestID, 1)
//	if err == nil && res.Outcome == stock.Reserved {
//		// the buyer holds a unit until Confirm, Release or WithHoldFor
//	}
//
// The pieces: Inventory.Reserve is the purchase (one Lua script checks the
// sale window, the request id, the per-user limit, deducts and appends the
// reservation to the sale's outbox stream); Confirm and Release are payment
// and the return of units, and a reservation not confirmed within
// WithHoldFor comes back on its own; a Consumer drains the outbox into a
// Sink (SQLStore for database/sql); Reconcile and Repair compare Redis with
// the database and rebuild Redis from it; Admission rate-limits per SKU and
// per user in front of Reserve; WithBuckets spreads one hot SKU over a
// cluster's masters; WithLocalSoldOut answers "sold out" without Redis.
//
// What every user must know:
//
//   - A deduction exists if and only if its outbox entry does; a request id
//     is applied at most once, in Redis and in the database; units reserved
//     plus sold never exceed the stock loaded.
//   - Every outbox entry reaches the sink at least once, unless it is
//     dead-lettered (counted, logged, kept): sinks must be idempotent per
//     request id and version. The order row appears within the consumer's
//     latency, not at once.
//   - Run one or more consumers per deployment, each under a name of its
//     own (a second live consumer under one name takes another, reported);
//     an entry is worked on by one consumer at a time whatever the batch
//     size and Apply time.
//   - Redis is the point of sale: what a Redis crash loses depends on its
//     persistence (nothing with appendfsync always; up to a second of
//     reservations with everysec; the sale without persistence, which
//     Repair rebuilds from the database).
//   - Every call returns when its context ends, on any go-redis client;
//     whether a call cut short ran in Redis is settled by retrying it under
//     the same request id.
//
// New, NewConsumer and NewAdmission take one Option type; a constructor
// given an option of another returns an error wrapping ErrInvalidOption.
// The zero configuration works: New(rdb) sells under DefaultPrefix
// with one bucket and one unit per user.
//
// Further reading, in the repository: docs/stock.md for each piece in
// detail, the Redis layout, the buckets, the guarantees and what each kind
// of Redis failure costs; docs/acl.md for the Redis permissions.
package stock
