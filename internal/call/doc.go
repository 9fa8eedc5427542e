// Package call bounds Redis calls by the caller's context on any go-redis
// client, and paces retries.
//
// # Bounded calls
//
// A go-redis client made with default options (ContextTimeoutEnabled false)
// ignores a context's deadline while it waits for a reply: against a frozen
// server a call lasts the client's ReadTimeout, retried MaxRetries times. A
// library cannot change its user's client, and a second client (or a clone
// with ContextTimeoutEnabled set) would not run the user's hooks (tracing,
// metrics) and would double the connections. So a call that must end before
// the client would end it runs on a goroutine of its own, and the caller
// returns when the call returns or when its context (or the per-call limit)
// ends, whichever comes first. A call left behind that way finishes inside
// go-redis within the client's own timeouts; its outcome goes to an abandon
// function (so that, say, a lock it obtained is given back), and a Flight
// counts it so that Close can wait for it.
//
// The hand-off is paid only where it buys a bound. A call runs on the
// caller's goroutine when the client applies context deadlines itself
// (ContextTimeoutEnabled), or when nothing tighter than the client's own
// read and write timeouts is asked for: the caller's context can never end,
// no limit is Strict, and the client has finite timeouts.
//
// The API:
//
//   - For(clients...) says how calls on those clients are bounded; Counting,
//     Strict and RedisAs refine it.
//   - Do runs one call under a Bound; Err is Do for calls that only fail.
//   - Detached marks a context so that the call runs detached from it while
//     the caller still returns when it ends (a release that must happen even
//     if the caller gives up).
//   - ErrAbandoned is matched by the error of a call given up on before its
//     reply came: whether it ran in Redis is unknown.
//   - Flight counts calls on goroutines of their own; Wait bounds Close.
//
// # Backoff
//
// Retries pace themselves with exponential backoff and equal jitter: each
// pause is uniform between half and all of the current step, so that
// clients that failed together spread out. Backoff is the stateful pacer
// (Next, Reset); Step and Jitter are its two halves for callers that count
// attempts themselves.
package call
