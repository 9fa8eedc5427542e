package stock

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/call"
)

// Every Redis call of the package goes through do or doErr (internal/call):
// on a go-redis client with default options, which ignores a context's
// deadline while it waits for a reply, a call whose context can end runs on
// a goroutine of its own and the caller returns when its context ends, with
// an error matching call.ErrAbandoned and the context's error. Whether an
// abandoned call ran in Redis is unknown; every write of the package is
// idempotent by request id, so the caller's retry settles it. On a client
// with ContextTimeoutEnabled, and for a context that never ends, calls run
// on the caller's goroutine. The consumer counts its calls that run on their
// own goroutine, and Close waits for them.
func do[T any](b call.Bound, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	return call.Do(b, ctx, 0, f, nil)
}

func doErr(b call.Bound, ctx context.Context, f func(context.Context) error) error {
	return call.Err(b, ctx, 0, f)
}
