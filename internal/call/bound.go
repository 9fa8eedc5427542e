package call

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrAbandoned is matched by the error of a call given up on before its
// reply came: whether it ran in Redis is unknown, and its outcome goes to
// the abandon function given to Do.
var ErrAbandoned = errors.New("cacheguard: Redis call abandoned")

// Bound says how calls on a go-redis client are bounded. Get one from For;
// the zero value hands every call that can end early to a goroutine and
// counts nothing.
//
// A client with default options that has finite read and write timeouts
// bounds every call itself, if not by the caller's wishes: at most
// (MaxRetries+1) x (ReadTimeout+WriteTimeout) plus the retry backoffs. A
// call whose context can never end and whose limit is not Strict has nothing
// tighter to honour, so it runs on the caller's goroutine.
type Bound struct {
	inline      bool    // the client applies context deadlines
	selfBounded bool    // the client's own timeouts end every call
	strict      bool    // limits must hold even on a selfBounded client
	flight      *Flight // calls on goroutines of their own (nil: not counted)
	timeoutErr  error   // matched by calls cut short by a limit (TimeoutAs)
	limitCause  error   // cause of a call context whose limit ran out
}

// For returns how calls on clients are bounded: inline only if every one
// applies context deadlines, self-bounded only if every one has finite read
// and write timeouts. Clients other than *redis.Client and
// *redis.ClusterClient (a ring, a wrapper) are neither.
func For(clients ...redis.UniversalClient) Bound {
	b := Bound{inline: len(clients) > 0, selfBounded: len(clients) > 0}
	for _, c := range clients {
		inline, self := false, false
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			inline, self = o.ContextTimeoutEnabled, o.ReadTimeout > 0 && o.WriteTimeout > 0
		case *redis.ClusterClient:
			o := c.Options()
			inline, self = o.ContextTimeoutEnabled, o.ReadTimeout > 0 && o.WriteTimeout > 0
		}
		b.inline, b.selfBounded = b.inline && inline, b.selfBounded && self
	}
	return b
}

// Counting returns b counting its calls on goroutines of their own in f.
func (b Bound) Counting(f *Flight) Bound { b.flight = f; return b }

// Strict returns b whose limits hold even where the client's own timeouts
// would end a call anyway (a limit the user asked for).
func (b Bound) Strict() Bound { b.strict = true; return b }

// TimeoutAs returns b whose calls cut short by their limit fail with an
// error matching err as well as context.DeadlineExceeded; so do calls that
// ran out of the client's own read or write timeout.
func (b Bound) TimeoutAs(err error) Bound {
	b.timeoutErr = err
	b.limitCause = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	return b
}

// Do runs call with a context that ends with ctx or after limit (0: no
// limit). If that context ends before the reply comes, Do returns an error
// matching ErrAbandoned and ctx.Err() (or context.DeadlineExceeded and the
// TimeoutAs error when the limit ran out), and abandon (when not nil)
// receives the call's outcome once it comes; otherwise abandon is not
// called. Exactly one of the caller and abandon takes the outcome.
//
// On a context marked by Detached the call runs detached from ctx (bounded
// by limit only) while the caller still returns when ctx ends; the call
// then goes on in the background.
func Do[T any](b Bound, ctx context.Context, limit time.Duration, call func(context.Context) (T, error), abandon func(T, error)) (T, error) {
	d, detached := ctx.Value(detachedKey{}).(detachedHow)
	// A caller that can wait for ever, on a client that ends its calls by
	// its own timeouts, gains nothing from a goroutine; a release after the
	// caller's context ended keeps its short bound.
	selfBound := b.selfBounded && !b.strict && ctx.Done() == nil && !d.strict
	// A ContextTimeoutEnabled client ends a call by the context's deadline
	// only: go-redis does not stop a read when a context without one is
	// cancelled, so such a caller is not held on its goroutine.
	inline := selfBound || (b.inline && (ctx.Done() == nil || hasDeadline(ctx)))
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
		cause := b.limitCause
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		runCtx, cancel = context.WithTimeoutCause(runCtx, limit, cause)
	}
	waitCtx := runCtx
	if detached {
		waitCtx = ctx
	}
	if inline || (waitCtx.Done() == nil && runCtx.Done() == nil) {
		defer cancel()
		v, err := call(runCtx)
		return v, b.limitErr(runCtx, err)
	}
	if err := waitCtx.Err(); err != nil && !detached {
		cancel()
		var zero T
		return zero, b.abandoned(waitCtx)
	}
	return handOff(b, runCtx, waitCtx, cancel, call, abandon)
}

// handOff runs call on a goroutine of its own and waits for its outcome
// until runCtx or waitCtx ends.
func handOff[T any](b Bound, runCtx, waitCtx context.Context, cancel context.CancelFunc, call func(context.Context) (T, error), abandon func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	// Exactly one side takes the outcome: the caller, if it came before
	// the context ended, or else abandon.
	var mu sync.Mutex
	gaveUp := false
	done := make(chan result, 1)
	b.flight.add()
	go func() {
		defer b.flight.done()
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
		return r.v, b.limitErr(runCtx, r.err)
	case <-waitCtx.Done():
	case <-runCtx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-done: // it came back after all
		return r.v, b.limitErr(runCtx, r.err)
	default:
	}
	gaveUp = true
	var zero T
	if waitCtx.Err() != nil {
		return zero, b.abandoned(waitCtx)
	}
	return zero, b.abandoned(runCtx)
}

// Err is Do for calls that only return an error, with no abandon function.
func Err(b Bound, ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	_, err := Do(b, ctx, limit, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, call(ctx)
	}, nil)
	return err
}

// limitErr makes the error of a call that failed because its limit ran out
// (go-redis gives up waiting for a connection, for one), or because a read
// or write ran out of the client's own timeout, match the TimeoutAs error.
func (b Bound) limitErr(ctx context.Context, err error) error {
	if err == nil || b.timeoutErr == nil || errors.Is(err, b.timeoutErr) {
		return err
	}
	var ne net.Error
	if errors.Is(context.Cause(ctx), b.timeoutErr) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %w", b.limitCause, err)
	}
	return err
}

// abandoned is the error of a call given up on when ctx ended: it matches
// ctx.Err(), and the TimeoutAs error when the call's limit ran out.
func (b Bound) abandoned(ctx context.Context) error {
	if cause := context.Cause(ctx); b.timeoutErr != nil && errors.Is(cause, b.timeoutErr) {
		return fmt.Errorf("%w: %w", ErrAbandoned, cause)
	}
	return fmt.Errorf("%w: %w", ErrAbandoned, ctx.Err())
}

type detachedKey struct{}

// detachedHow is the value of detachedKey. strict: the caller's context had
// already ended, so the call keeps its own short bound even on a
// self-bounded client.
type detachedHow struct{ strict bool }

// Detached marks ctx so that Do runs the call detached from it (bounded by
// its limit only), while the caller returns when ctx ends. strict says ctx
// had already ended: the limit then holds even on a client whose own
// timeouts end every call.
func Detached(ctx context.Context, strict bool) context.Context {
	return context.WithValue(ctx, detachedKey{}, detachedHow{strict})
}

// hasDeadline reports whether ctx has a deadline.
func hasDeadline(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok
}
