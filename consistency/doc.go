// Package consistency is the write path of cacheguard: it keeps cached values
// from outliving the database rows they were read from.
//
// The read path (package cache) already refuses the classic stale write-back:
// a reader that loaded a row before a Delete cannot fill it afterwards,
// because Delete removes its lease. Three gaps remain, and this package
// closes them.
//
// # Reads that load the old row after the delete
//
// A reader that misses after the writer's delete but loads before the write
// is visible to it (the write has not committed, or the reader reads a
// replica that has not applied it) fills the old row, and nothing removes it
// until its TTL runs out. Target.Update answers with a delayed double delete:
//
//	users, _ := q.Register("users", userCache)
//	err := users.Update(ctx, []string{id}, func(ctx context.Context) error {
//		return repo.SaveUser(ctx, u)
//	})
//
// deletes the keys, runs the write, and deletes them again after a delay
// (WithDelay, 500 ms by default) longer than the replicas' lag.
//
// # A second delete that must not be lost
//
// The second delete is recorded in Redis before the write runs, in a sorted
// set of the target scored by due time, and carried out by a background
// worker in whichever instance is alive: if the writer dies right after its
// write, another instance runs the delete when it comes due. Workers claim
// due entries in batches with a script that hides them for a visibility
// timeout and tags them with a claim token, so two instances never run the
// same batch; a worker that dies mid-batch loses it to the next claim after
// the timeout, and its late acknowledgement is refused. A delete that fails
// is retried with exponential backoff; after the retry budget
// (WithMaxAttempts) it goes to a dead-letter list, is counted per target and
// is logged at error level, so that an operator learns which keys may stay
// stale. The queue's keys share one hash tag per shard (WithShards: 1 by
// default, more to spread the queue over several slots of a Redis Cluster),
// and every script touches one shard; the caches' own keys live wherever the
// cluster puts them. WaitReplicas makes deletes wait for replicas.
//
// Entries name their target, not a Go value: every instance registers the
// same names for the same caches (Queue.Register), and an instance only
// claims entries of the targets it registered. Target.Invalidate deletes at
// once and records a retry only when that fails; Target.InvalidateAfter
// records a delete for later. The binlog adapter (module
// github.com/cacheguard/cacheguard/consistency/binlog) turns row changes read
// from a MySQL or MariaDB binlog into Invalidate calls, for writers that do
// not go through Update at all.
//
// # Writers that race each other
//
// Two writers that push new values into the cache (write-through rather
// than delete) can reach Redis out of order and leave the older value.
// Versioned stores newest-wins: each write carries the version the database
// gave the row and lands only if it is newer than the stored one, and a
// versioned delete leaves a tombstone that refuses older writes arriving
// later. Plain invalidations keep that order too: Invalidate, Update, queued
// deletes and the binlog adapter leave a version tombstone on a key that held
// a version (WithTombstoneTTL, 1 minute by default), which readers miss on
// and which refuses versioned writes no newer than it. Once it expires the
// key is empty and a write of any version lands, so the TTL must exceed the
// longest time a versioned write can take to reach Redis.
//
// # Serving stale instead of missing
//
// Deleting a hot key sends every reader to the loader until one refills it.
// With the ServeStale target option, invalidations mark entries stale
// instead: readers keep getting the old value at once while exactly one
// caller reloads it, and a stale value is served for at most the given bound.
// It trades a bounded window of stale reads for a flat database load and is
// off by default: the default is that an invalidated entry is never served
// again.
//
// # Deadlines
//
// Every call takes a context and returns by its deadline, and the worker
// bounds each of its Redis calls with WithTimeout, on any go-redis client.
// A client made with default options ignores context deadlines while it
// waits for a reply (against a frozen server a call lasts its ReadTimeout,
// times its retries), so there a call that must end sooner runs on a
// goroutine of its own and is left to finish in the background at the
// deadline; Close waits for such calls, up to the timeout. A write left
// behind that way may still land: a recorded delete then runs as recorded.
// The retry of a failed Invalidate and Update's move of its second delete
// run detached from the caller's context, bounded by the timeout, so a
// caller that gives up does not stop them. With ContextTimeoutEnabled on the
// client, go-redis applies deadlines itself and calls run on the caller's
// goroutine, which is cheaper.
//
// # Clocks
//
// Due times and claim deadlines are computed inside the queue's scripts from
// the Redis server's clock (TIME), so an instance whose clock is off neither
// runs second deletes early nor delays anyone's. The local clock only times
// the worker's sleeps.
//
// # Failures stay per entry
//
// A claimed batch is deleted in one call; if that fails, each entry is run
// on its own, so one delete that keeps failing is retried and dead-lettered
// alone while the rest of its batch is acknowledged.
package consistency
