// Package lock provides distributed locks on Redis: a reentrant mutex with
// fencing tokens, a writer-preferring read-write lock, a semaphore with
// expiring permits, Redlock over independent masters and MultiLock (several
// locks held as one, all or none), plus the checks a protected resource
// makes on fencing tokens (ExecFenced, SetFenced).
//
//	c, err := lock.New(rdb) // rdb: any redis.UniversalClient
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	h, err := c.Mutex("orders:42").Lock(ctx)
//	if err != nil {
//		return err // errors.Is(err, lock.ErrNotObtained) when ctx ended first
//	}
//	defer h.Unlock(ctx)
//	err = db.Update(h.Context(), order, h.Token())
//
// What every user must know:
//
//   - A lock held by a process that pauses (GC, a stopped VM) or is cut off
//     from Redis longer than its lease is lost, and no lock on Redis can
//     stop a write already on the wire. Handle.Token is the answer for
//     correctness: every new holder gets a strictly larger token, and a
//     resource that refuses tokens smaller than the largest it has seen
//     (ExecFenced, SetFenced, a version column) turns a stale holder's write
//     into a refused one.
//   - A lost lease ends the handle's Context (context.Cause says why, ErrLost)
//     and Handle.Err reports it: run the protected work under h.Context().
//   - By default a lock has a 30 s lease that the client's watchdog renews
//     every lease/3 while it is held, so work may take as long as it needs
//     and a holder that crashes frees the lock within one lease.
//   - Reentrancy needs an owner id in the context (ContextWithOwner); without
//     one every acquisition is a new owner. A handle's Context carries its
//     owner id.
//   - Every call returns by its context's deadline or the operation timeout
//     (WithTimeout), on any client; Unlock releases on a context of its own.
//   - Waiters are woken by a release notification on the client's shared
//     pub/sub connection, one attempt per handover, with a backoff as the
//     fallback.
//   - All keys of a lock share the hash tag {name}, so every script works on
//     a Redis Cluster; a name with a hash tag of its own lives in the slot of
//     the data it guards. Redis 6.2 or later (7.0 on a cluster).
//   - Redlock survives the loss of a minority of its masters, but rests on
//     timing assumptions: use a Mutex with fencing where correctness depends
//     on mutual exclusion, Redlock where an occasional overlap costs little.
//
// Options, by what they are for: WithPrefix (the keys); WithLease,
// WithoutWatchdog and WithDriftFactor (how long a hold lasts and how it is
// renewed); WithTimeout, WithBackoff and WithNodeTimeout (how long calls and
// waits take); WithoutFencing (a mutex with no token, one SET NX PX to take);
// WithLogger and WithObserver (reporting).
//
// Further reading, in the repository: docs/lock.md for the model of each
// lock, the local validity of a hold, bounded calls, fencing tokens across
// Redis losing its counter, names, reentrancy, waiting, semaphores,
// MultiLock, Sentinel and TLS, and when Redlock is and is not safe;
// lock/README.md for Redlock's fencing guarantee when clocks disagree;
// docs/acl.md for the Redis permissions.
package lock
