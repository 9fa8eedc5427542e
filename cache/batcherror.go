package cache

import (
	"context"
	"fmt"
	"strings"
)

// BatchError is the error GetMany returns when some of its keys failed. The
// keys that did not fail are in GetMany's map as usual (or absent, for rows
// that do not exist); each failed key has its own error, so one key's
// trouble never takes the others down with it.
//
// errors.Is and errors.As look through every key's error (Unwrap returns
// them all), so errors.Is(err, ErrWaitTimeout), errors.Is(err, ErrRedis) or
// errors.Is(err, context.DeadlineExceeded) is true when at least one key
// failed that way; use Err or Keys to tell which.
type BatchError struct {
	keys  []string         // failed keys, in the order they were asked for
	errs  map[string]error // the error of each failed key
	asked int              // distinct keys asked for
}

// newBatchError returns the BatchError for the failures in errs, keys in the
// order of asked (duplicates once), or nil when nothing failed.
func newBatchError(asked []string, errs map[string]error) error {
	if len(errs) == 0 {
		return nil
	}
	e := &BatchError{keys: make([]string, 0, len(errs)), errs: errs}
	seen := make(map[string]bool, len(asked))
	for _, k := range asked {
		if seen[k] {
			continue
		}
		seen[k] = true
		e.asked++
		if _, failed := errs[k]; failed {
			e.keys = append(e.keys, k)
		}
	}
	return e
}

// Keys returns the keys that failed, in the order they were asked for.
func (e *BatchError) Keys() []string {
	return append([]string(nil), e.keys...)
}

// Err returns the error of key, or nil if key did not fail.
func (e *BatchError) Err(key string) error {
	return e.errs[key]
}

// Unwrap returns every failed key's error, in the order of Keys.
func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.keys))
	for i, k := range e.keys {
		out[i] = e.errs[k]
	}
	return out
}

// batchErrorShown is how many keys Error names before it summarises the rest.
const batchErrorShown = 3

// Error names how many keys failed and the first few with their errors.
func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cacheguard: cache: %d of %d keys failed", len(e.keys), e.asked)
	for i, k := range e.keys {
		if i == batchErrorShown {
			fmt.Fprintf(&b, "; %d more", len(e.keys)-i)
			break
		}
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		// The keys' errors carry the package prefix too: say it once.
		fmt.Fprintf(&b, "%s%q: %s", sep, k, strings.TrimPrefix(e.errs[k].Error(), "cacheguard: cache: "))
	}
	return b.String()
}

func (c *Cache[V]) getMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	if err := c.gens.Await(ctx); err != nil {
		return nil, err
	}
	out, failed, err := c.eng.GetMany(ctx, keys, load)
	if err != nil {
		return nil, err
	}
	return out, newBatchError(keys, failed)
}
