// Package lock provides distributed locks on Redis: a reentrant mutex with
// fencing tokens, a writer-preferring read-write lock, a semaphore with
// expiring permits, Redlock over independent masters and MultiLock (several
// locks held as one, all or none), plus the checks a protected resource
// makes on fencing tokens (ExecFenced, SetFenced).
//
// # Model
//
// A Mutex is one Redis string, "#<token>:<holds>:<owner>", with its lease as
// the key's expiry. A release leaves "<token>", with the lease the lock had,
// as the floor of the next token. Taking, renewing and releasing it are Lua
// scripts, so each check-and-change is atomic: only the owner can extend or
// release its lock,
// and a holder whose lease ran out can never delete its successor's lock.
// All keys of one lock (and its release channel) share the hash tag {name},
// so every script works unchanged on a Redis Cluster. Redis 6.2 or later is
// needed (7.0 on a cluster, for sharded pub/sub).
//
// Under Sentinel (redis.NewFailoverClient) a Mutex, RWMutex, Semaphore and
// Lease work as on a single node, and release notifications follow the
// master across a planned failover (SENTINEL FAILOVER) and a killed master:
// the subscriber compares its node with the master the Sentinels name after
// every health check (the lock tests run on a Sentinel topology too; the
// failover itself is exercised by the cache's tests of the shared
// subscriber). As with any asynchronously replicated Redis, a lock taken on the old master
// after the promotion and before the client learnt of it can be lost with
// the writes Redis loses; its holder then sees its lease gone at the next
// renewal (the handle's Context ends with ErrLost), and fencing tokens,
// checked by the resource, keep such a holder out.
//
// Over TLS locks work on every topology as without it: the subscriber's
// connections take the client's TLSConfig, credentials and Dialer (the
// tests wake a waiter by the release notification on servers that accept
// TLS only: a single node, a cluster and Sentinel).
//
//	c, err := lock.New(rdb)                 // rdb: any redis.UniversalClient
//	defer c.Close()
//	h, err := c.Mutex("orders:42").Lock(ctx)
//	if err != nil { ... }                   // errors.Is(err, lock.ErrNotObtained)
//	defer h.Unlock(ctx)
//	err = db.Update(h.Context(), order, h.Token())
//
// A Mutex made WithoutFencing has no token and a simpler layout, a string
// "<holds>:<owner>": taking a free one is a single SET NX PX, as cheap as a
// lock gets on Redis. Use it when nothing a paused holder could corrupt
// depends on the lock.
//
// Earlier versions kept a Mutex as a hash {owner, n, token}. The scripts
// read such a hash as held while it has an owner and take its token as the
// floor once it has none, and the earlier scripts fail with WRONGTYPE on a
// string: processes of both versions may share a Redis during a rolling
// deploy without ever granting one lock twice.
//
// Leases. By default a lock is taken with a 30 s lease and the client's
// watchdog renews it every lease/3 while it is held, so work may take as long
// as it needs, and a holder that crashes frees the lock within one lease.
// WithLease gives a fixed lease instead (no renewal; Extend moves it). One
// goroutine per client (Client, Redlock, or MultiLock made by NewMultiLock)
// schedules all renewals and exists only while the client holds something.
//
// Local validity. Every reply that grants or renews a lock carries the lease
// the key has in Redis at that moment, and the holder trusts the lock until
// the moment it sent that request plus that lease, less a drift allowance:
// Redis set the lease after the request left, so the lock cannot expire
// sooner. No script of a hold ever shortens its lease (a reentrant
// acquisition, a renewal, Extend: each makes it last at least as long as
// asked), so while the owner holds the lock its lease in Redis only grows,
// and a reply that comes late or out of order still gives a true lower bound.
//
// Lost leases. A process can be paused (GC, swapping, a stopped VM) or cut
// off from Redis longer than its lease. Handle.Err reports the lease lost as
// soon as the local deadline passes, and the handle's Context is cancelled
// then (on a timer, like any deadline context): when the lease runs out by
// the local clock without a successful renewal, or when a renewal finds the
// key gone or taken. context.Cause says why.
//
// Bounded calls. Every Redis call returns by its context's deadline, or by
// the operation timeout (WithTimeout; by default the lease), even on a
// go-redis client made with default options, which does not apply context
// deadlines to its reads: the call is abandoned, its outcome handled in the
// background (a lock it obtained is given back). Unlock releases on a
// context of its own, so a cancelled context does not strand the lock. On a
// client made with ContextTimeoutEnabled, go-redis applies deadlines itself
// and calls run on the caller's goroutine, which is cheaper: prefer it.
// A call whose context has neither deadline nor cancellation, on a lock
// without WithTimeout, also runs on the caller's goroutine when the client's
// ReadTimeout and WriteTimeout are finite (the go-redis defaults): it is
// then bounded by the client's own timeouts, at most (MaxRetries+1) x
// (ReadTimeout + WriteTimeout) plus the retry backoffs, not by the lease,
// and a read or write that runs out matches ErrTimeout.
//
// Fencing tokens. Cancellation cannot stop a write already on the wire, and
// a paused process learns of nothing until it resumes. Handle.Token is the
// answer for correctness: every new holder of a lock gets a strictly larger
// token, and a protected resource that remembers the largest token it has
// accepted and refuses smaller ones (a version column, a compare in a Lua
// script) turns a stale holder's write into a refused write instead of lost
// data. A token is one more than the last one, but at least the Redis
// server's clock in microseconds, so tokens keep growing when Redis loses
// the counter (a restart without persistence, FLUSHALL, a failover to a
// replica that missed it, eviction), provided the server's clock (or, after
// a failover, the new master's) does not go back. The counter therefore
// lives only as long as the lock's last lease (a released lock keeps just
// its token until then), and an idle lock keeps no key in Redis.
//
// Names. A lock's keys are the prefix, then the name in braces, which makes
// the name the hash tag of every key of the lock. A name that carries its
// own hash tag ("orders:{42}:lock") is used as it is, so the lock lives in
// the cluster slot of the data it guards ("orders:{42}") and one script can
// touch both; braces that would not form one non-empty tag are refused with
// ErrInvalidName.
//
// Reentrancy. Go has no thread identity, so the owner is explicit: an id
// carried in the context (ContextWithOwner). Acquisitions with the same owner id
// are counted in the lock and only the last Unlock releases. Without an id
// every acquisition is a new owner. A handle's Context carries its owner id,
// so code running under it reenters naturally.
//
// Waiting. Lock retries until its context ends. Waiters subscribe to the
// lock's release channel (a shard channel with SSUBSCRIBE on a cluster; one
// subscriber connection per node carries all the channels waited on, shared
// by every Client and cache.Cache built on the same go-redis client, and it
// is closed when nobody waits or listens on it any more; when a slot moves
// to another master, or a failover promotes another node, its channels move
// to that master's connection and their waiters try again), and
// a client with waiters puts itself on the lock's wait list; each release
// names one client of that list at random, which wakes its longest waiting
// waiter, so a handover costs one attempt, not one per process. As a
// fallback a waiter also retries on a jittered exponential backoff, never
// sleeping longer than the current holder's remaining lease. A Lock may
// barge in ahead of waiters (the releaser, already running, keeps a hot lock
// busy) until a waiter of its client has waited 2 ms; then it queues, as in
// sync.Mutex. When the context ends first, the error matches both
// ErrNotObtained and ctx.Err().
//
// Semaphores. Client.Semaphore hands out up to n permits of a name. Each
// acquisition's permits carry their own lease, renewed by the same watchdog,
// so a holder that crashes gives its permits back within one lease; waiters
// are woken by the same release notifications.
//
// Read-write locks are writer-preferring: see RWMutex.
//
// MultiLock holds several locks as one, all or none: Client.MultiLock over
// several names on one Redis (each lock its own key, on a cluster in the
// slot of its name), NewMultiLock over Mutexes of several Clients
// (independent masters). The locks are taken one by one in a canonical
// order (sorted, duplicates dropped), and when one is refused, the context
// ends or the client is closed, those already taken are released before
// the call waits (on the backoff: a MultiLock has no release
// notifications) or returns. One hold, renewed by the watchdog, covers them
// all: its deadline is the earliest of theirs, its Context ends with
// ErrLost when any of them is lost, and Unlock releases every one and
// reports each that was not released. It has no single fencing token
// (Token is 0): Handle.Tokens gives one per lock.
//
// # Redlock: when it is and is not safe
//
// A lock on one Redis master is lost if that master fails over to a replica
// that had not yet received the lock (replication is asynchronous), or
// restarts without persistence. Redlock takes the lock on N independent
// masters and holds it only if a majority granted it within the lease; it
// then survives the loss of a minority of nodes, as the tests show with two
// of five killed.
//
// Redlock's safety rests on timing assumptions: bounded network delay,
// bounded process pauses and clocks that advance at about the same rate on
// every node (the drift allowance covers small differences). A process paused
// past its validity time, a node whose clock jumps, or a node that restarts
// without persistence and forgets a lock it granted (unless it stays down for
// at least one lease) can let two holders in at once.
//
// Redlock issues fencing tokens all the same. Each node draws a token by the
// Mutex rule; the holder takes the largest of its quorum's and writes it
// back to those nodes (raising their counters) before it holds the lock, and
// gives the lock up if that write does not reach a quorum. Any two quorums
// share a node, so the next holder draws on a node that already knows this
// token and gets a larger one. A node keeps its counter until the last
// lease it granted ends; the clocks only matter once a shared node has lost
// it (see the package README for the precise guarantee when clocks
// disagree).
//
// So: use a Mutex (with fencing tokens checked by the resource) when
// correctness depends on mutual exclusion; use Redlock for efficiency (avoid
// doing the same work twice) where an occasional overlap costs little, or
// combine it with a fencing check in the resource. Give Redlock node clients
// MaxRetries: -1 and DialerRetries: 1 so that a dead node costs a refused
// connection rather than the node timeout.
//
// docs/acl.md lists the Redis ACL a lock client needs. A user without the
// permission on the lock channels still locks and releases: releases skip
// their announcement, waiters poll on their backoff instead of being woken,
// and the refused subscription is logged.
package lock
