// Package consistency is the write path of cacheguard: it keeps cached values
// from outliving the database rows they were read from.
//
//	q, err := consistency.New(rdb, consistency.WithPrefix("app:consistency"))
//	if err != nil {
//		return err
//	}
//	defer q.Close()
//	users, err := q.Register("users", userCache)
//	err = users.Update(ctx, []string{id}, func(ctx context.Context) error {
//		return repo.SaveUser(ctx, u)
//	})
//
// Update deletes the keys, runs the write, and deletes them again after a
// delay (WithDelay, 500 ms by default) longer than the replicas' lag: a
// reader that missed after the first delete but loaded the old row (the
// write not yet committed, or read from a replica) has its fill removed.
//
// What every user must know:
//
//   - The second delete is recorded in Redis before the write runs and
//     carried out by a worker in whichever instance is alive, so it is not
//     lost when the writer dies; one that keeps failing goes to a
//     dead-letter list after WithMaxAttempts, counted and logged.
//   - Every instance registers the same target names for the same caches
//     (Queue.Register); an instance runs only the entries of the targets it
//     registered.
//   - Target.Invalidate deletes at once and records a retry only when that
//     fails; Target.InvalidateAfter records a delete for later. Writers that
//     do not go through Update are covered by the binlog adapter (module
//     github.com/cacheguard/cacheguard/consistency/binlog).
//   - Writers that push new values (write-through) use NewVersioned:
//     newest-wins by the version the database gave the row; invalidations
//     leave a version tombstone (WithTombstoneTTL) that refuses older
//     writes arriving later.
//   - ServeStale (a target option) marks entries stale instead of deleting
//     them, for hot keys: readers get the old value at once while one
//     caller reloads. Off by default.
//   - Every call returns by its context's deadline on any go-redis client;
//     due times come from the Redis server's clock, not the instances'.
//
// Options, by what they are for: WithPrefix and WithShards (the queue's
// keys, spread over cluster slots); WithDelay and WithWriteGrace (when the
// second delete runs); WithMaxAttempts, WithBackoff and WithDeadLetterLimit
// (retries); WithBatchSize, WithVisibilityTimeout, WithPollInterval and
// WithoutWorker (the worker); WithTimeout (each Redis call);
// WithTombstoneTTL (versions); WithLogger and WithErrorHandler (reporting).
// Target options: WaitReplicas, ServeStale.
//
// Further reading, in the repository: docs/consistency.md for each gap the
// package closes and how, the queue and its claims, versions and
// tombstones, serving stale, deadlines, clocks and failures per entry;
// docs/acl.md for the Redis permissions.
package consistency
