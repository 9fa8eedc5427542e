package call

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// ErrAbandoned is matched by the error of a call given up on before its
// reply came: whether it ran in Redis is unknown, and its outcome goes to
// the abandon function given to Do. Its text has no prefix: it is always
// wrapped, in the package's ErrRedis or beside the caller's context error.
var ErrAbandoned = errors.New("Redis call abandoned")

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
	redisErr    error   // the package's ErrRedis (RedisAs)
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

// RedisAs returns b whose calls fail with errors of sentinel's kind (a
// package's ErrRedis, internal/kind), redis.Nil and the end of the caller's
// context excepted. A call cut short by its limit, or that ran out of the
// client's own read or write timeout, also matches
// context.DeadlineExceeded: TimedOut tells it apart.
func (b Bound) RedisAs(sentinel error) Bound {
	b.redisErr = sentinel
	b.limitCause = kind.Errorf("%w: call timed out: %w", sentinel, context.DeadlineExceeded)
	return b
}

// TimedOut reports whether err is the error of a call, made under the
// caller's ctx, cut short by its own limit or by the client's timeouts
// while ctx had not ended: the call may be tried again.
func TimedOut(ctx context.Context, err error) bool {
	return kind.Ended(ctx) == nil && errors.Is(err, context.DeadlineExceeded)
}

// Do runs call with a context that ends with ctx or after limit (0: no
// limit). If that context ends before the reply comes, Do returns an error
// matching ErrAbandoned and ctx.Err() (or context.DeadlineExceeded and the
// RedisAs error when the limit ran out), and abandon (when not nil)
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
		return v, b.fail(ctx, runCtx, err)
	}
	if err := waitCtx.Err(); err != nil && !detached {
		cancel()
		var zero T
		return zero, b.abandoned(ctx, waitCtx)
	}
	return handOff(b, ctx, runCtx, waitCtx, cancel, call, abandon)
}

// handOff runs call on a goroutine of its own and waits for its outcome
// until runCtx or waitCtx ends.
func handOff[T any](b Bound, ctx, runCtx, waitCtx context.Context, cancel context.CancelFunc, call func(context.Context) (T, error), abandon func(T, error)) (T, error) {
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
		return r.v, b.fail(ctx, runCtx, r.err)
	case <-waitCtx.Done():
	case <-runCtx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-done: // it came back after all
		return r.v, b.fail(ctx, runCtx, r.err)
	default:
	}
	gaveUp = true
	var zero T
	if waitCtx.Err() != nil {
		return zero, b.abandoned(ctx, waitCtx)
	}
	return zero, b.abandoned(ctx, runCtx)
}

// Err is Do for calls that only return an error, with no abandon function.
func Err(b Bound, ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	_, err := Do(b, ctx, limit, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, call(ctx)
	}, nil)
	return err
}

// fail makes err, the error of a call made under the caller's ctx with
// runCtx, an error of the RedisAs kind: a call that failed because its limit
// ran out (go-redis gives up waiting for a connection, for one), or because
// a read or write ran out of the client's own timeout, says it timed out;
// redis.Nil and the end of ctx come back as they are.
func (b Bound) fail(ctx, runCtx context.Context, err error) error {
	if err == nil || b.redisErr == nil || errors.Is(err, redis.Nil) || errors.Is(err, b.redisErr) {
		return err
	}
	var ne net.Error
	if kind.Ended(ctx) == nil && (errors.Is(context.Cause(runCtx), b.redisErr) || (errors.As(err, &ne) && ne.Timeout())) {
		return kind.Errorf("%w: %w", b.limitCause, err)
	}
	return kind.RedisErr(ctx, b.redisErr, "", err) // the caller's end comes back as it is
}

// abandoned is the error of a call given up on when waitCtx ended: it
// matches ctx.Err() when the caller's ctx ended, and else the RedisAs error
// and context.DeadlineExceeded (the call's limit ran out).
func (b Bound) abandoned(ctx, waitCtx context.Context) error {
	if err := ctx.Err(); err != nil || b.redisErr == nil {
		return kind.Errorf("%w: %w", ErrAbandoned, waitCtx.Err())
	}
	return kind.Errorf("%w: %w", b.limitCause, ErrAbandoned)
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
