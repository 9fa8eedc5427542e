package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounding Redis calls. A go-redis client made with default options
// (ContextTimeoutEnabled false) ignores a context's deadline while it waits
// for a reply: against a frozen server a call lasts ReadTimeout, retried
// MaxRetries times. The package cannot change the caller's client, and a
// second client (or a WithTimeout clone with ContextTimeoutEnabled set)
// would not run the caller's hooks (tracing, metrics) and would double the
// connections. So each call runs on its own goroutine and the caller
// returns when the call returns or when its context (or the operation
// timeout) ends, whichever comes first. A call abandoned that way finishes
// inside go-redis within the client's own timeouts (at once if the client
// is closed); its outcome is handed to an abandon function, so that a lock
// it obtained is given back rather than left to its lease, and Close waits
// for it, up to closeWait.

// callSet says how the calls of a client are bounded and keeps count of
// the ones running on goroutines of their own.
//
// A client with default options that has finite read and write timeouts
// bounds every call itself, if not by the caller's wishes: at most
// (MaxRetries+1) x (ReadTimeout+WriteTimeout) plus the retry backoffs. A
// call whose context can never end (no deadline, no cancellation) and
// whose lock has no WithTimeout has nothing tighter to honour, so it runs
// on the caller's goroutine too (selfBounded): the goroutine hand-off is
// paid only where it buys a bound.
type callSet struct {
	inline      bool           // the Redis client applies context deadlines
	selfBounded bool           // the Redis client's own timeouts end every call
	explicit    bool           // WithTimeout was given: calls must end by it
	inflight    *inflightCalls // calls on their own goroutines (nil: not counted)
}

// inflightCalls counts calls running on goroutines of their own. Unlike a
// sync.WaitGroup it may gain calls while Close waits for it (an Unlock or
// the give-back of an abandoned acquisition can start at any time), and its
// wait needs no goroutine, so nothing of it outlives a bounded wait.
type inflightCalls struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (f *inflightCalls) add() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

func (f *inflightCalls) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// wait waits until no call runs, at most d; it reports whether none does.
func (f *inflightCalls) wait(d time.Duration) bool {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// callClient returns the client to run calls on, whether it applies
// context deadlines to its socket reads, and whether its own read and write
// timeouts end every call (see callSet).
func callClient(rdb redis.UniversalClient) (c redis.UniversalClient, inline, selfBounded bool) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return c, o.ContextTimeoutEnabled, o.ReadTimeout > 0 && o.WriteTimeout > 0
	case *redis.ClusterClient:
		o := c.Options()
		return c, o.ContextTimeoutEnabled, o.ReadTimeout > 0 && o.WriteTimeout > 0
	}
	return rdb, false, false
}

// closeWait bounds how long Close waits for abandoned calls to finish.
const closeWait = 5 * time.Second

// errAbandoned marks a call given up on before its reply came: whether it
// ran in Redis is unknown, and its outcome goes to the abandon function.
var errAbandoned = errors.New("lock: call abandoned")

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

// bounded runs call with a context that ends with ctx or after limit (0: no
// limit). If the context ends first it returns an error matching ctx.Err()
// (or ErrTimeout and context.DeadlineExceeded when the limit ran out) and
// errAbandoned, and abandon (when not nil) receives the call's outcome once
// it comes.
//
// calls.inline says the Redis client applies context deadlines to its
// reads: the call then runs on the caller's goroutine, which saves a
// goroutine hand-off per call.
//
// A ctx made by detachedRun runs the call on a context detached from it
// (bounded by limit only), while the caller still returns when ctx ends:
// the call goes on in the background.
func bounded[T any](calls callSet, ctx context.Context, limit time.Duration, call func(context.Context) (T, error), abandon func(T, error)) (T, error) {
	d, detached := ctx.Value(detachedKey{}).(detachedHow)
	// A caller that can wait for ever, on a client that ends its calls by
	// its own timeouts, gains nothing from a goroutine (see callSet); a
	// release after the caller's context ended must keep its short bound.
	selfBound := calls.selfBounded && !calls.explicit && ctx.Done() == nil && !d.strict
	inline := calls.inline || selfBound
	if selfBound {
		// The client's timeouts end the call (on a ContextTimeoutEnabled
		// client too: without a deadline it reads with ReadTimeout), so a
		// timer context per call would buy nothing.
		limit = 0
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if detached {
		// The caller can only be made to wait less than the call when ctx
		// can end; otherwise the call may as well run on its goroutine.
		runCtx, inline = context.WithoutCancel(ctx), inline && ctx.Done() == nil
	}
	if limit > 0 {
		runCtx, cancel = context.WithTimeoutCause(runCtx, limit, errLimit)
	}
	waitCtx := runCtx
	if detached {
		waitCtx = ctx
	}
	if inline || (waitCtx.Done() == nil && runCtx.Done() == nil) {
		defer cancel()
		v, err := call(runCtx)
		return v, limitErr(runCtx, err)
	}
	if err := waitCtx.Err(); err != nil && !detached {
		cancel()
		var zero T
		return zero, callErr(waitCtx)
	}
	type result struct {
		v   T
		err error
	}
	// Exactly one side takes the outcome: the caller, if it came before
	// the context ended, or else abandon.
	var mu sync.Mutex
	gaveUp := false
	done := make(chan result, 1)
	if calls.inflight != nil {
		calls.inflight.add()
	}
	go func() {
		if calls.inflight != nil {
			defer calls.inflight.done()
		}
		defer cancel() // after the outcome is taken: the caller also watches runCtx
		v, err := call(runCtx)
		mu.Lock()
		if gaveUp {
			mu.Unlock()
			if abandon != nil {
				abandon(v, err)
			}
			return
		}
		done <- result{v, err}
		mu.Unlock()
	}()
	select {
	case r := <-done:
		return r.v, limitErr(runCtx, r.err)
	case <-waitCtx.Done():
	case <-runCtx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-done: // it came back after all
		return r.v, limitErr(runCtx, r.err)
	default:
	}
	gaveUp = true
	var zero T
	if waitCtx.Err() != nil {
		return zero, callErr(waitCtx)
	}
	return zero, callErr(runCtx)
}

// errLimit is the cause of a call context whose operation timeout ran out.
var errLimit = fmt.Errorf("%w (%w)", ErrTimeout, context.DeadlineExceeded)

// limitErr makes the error of a call that failed because the operation
// timeout ran out (go-redis gives up waiting for a connection, for one)
// match ErrTimeout.
//
// A read or write that ran out of the client's own timeout (a call run on
// the caller's goroutine of a self-bounded client, see callSet) matches
// ErrTimeout too.
func limitErr(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrTimeout) {
		return err
	}
	var ne net.Error
	if errors.Is(context.Cause(ctx), ErrTimeout) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

func callErr(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrTimeout) {
		return fmt.Errorf("%w: %w", errAbandoned, cause)
	}
	return fmt.Errorf("%w: %w", errAbandoned, ctx.Err())
}

type detachedKey struct{}

// detachedHow is the value of detachedKey. strict: the caller's context had
// already ended, so the call keeps its own short bound even on a client
// that bounds its calls by its timeouts (see callSet).
type detachedHow struct{ strict bool }

// detachedRun marks ctx so that bounded runs calls detached from it; strict
// as in detachedHow.
func detachedRun(ctx context.Context, strict bool) context.Context {
	return context.WithValue(ctx, detachedKey{}, detachedHow{strict})
}

// boundedErr is bounded for calls that only return an error.
func boundedErr(calls callSet, ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	_, err := bounded(calls, ctx, limit, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, call(ctx)
	}, nil)
	return err
}
