package lock

import "time"

// Bounding Redis calls. Every call goes through call.Do (internal/call):
// on a go-redis client with default options, which ignores a context's
// deadline while it waits for a reply, a call that must end sooner than
// the client would end it runs on a goroutine of its own, and the caller
// returns by its context or the operation timeout, whichever comes first.
// An acquisition abandoned that way hands its outcome to an abandon
// function, so that a lock it obtained is given back rather than left to
// its lease, and Close waits for such calls, up to closeWait. The client's
// config holds the call.Bound (cfg.calls): it counts in the engine's Flight,
// reports every Redis failure as ErrRedis (a limit that ran out matching
// context.DeadlineExceeded as well), and is Strict when
// WithTimeout was given.

// closeWait bounds how long Close waits for abandoned calls to finish.
const closeWait = 5 * time.Second

// callTimeout is how long one Redis call of a lock with this lease may take.
func (c *config) callTimeout(lease time.Duration) time.Duration {
	if c.opTimeout > 0 {
		return c.opTimeout
	}
	return lease
}

// releaseTimeout bounds a release, which runs on its own context so that a
// caller whose context has ended still frees the lock.
func (c *config) releaseTimeout() time.Duration {
	if c.opTimeout > 0 {
		return c.opTimeout
	}
	return min(c.lease, defaultReleaseTimeout)
}

// defaultReleaseTimeout bounds a release without WithTimeout: long enough
// for a busy connection pool, short against a lease.
const defaultReleaseTimeout = 5 * time.Second
