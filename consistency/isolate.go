package consistency

import (
	"context"
	"errors"
	"sync"
)

// Failure isolation. A claimed batch is first deleted in one call, all keys
// together, which is the fast path. If that call fails, each entry is run on
// its own, so that one entry whose delete keeps failing (a key some fault
// refuses) fails alone: the others are acknowledged, and only it is retried
// and, after its budget, dead-lettered.
//
// The entries run a few at a time, and the whole pass stops at the
// visibility timeout less two timeouts (WithTimeout), so that what settles them still
// holds the claim; entries the pass did not reach are put back due at once,
// with no attempt spent.

// isolateParallel is how many entries of a failed batch run at once.
const isolateParallel = 8

// errUnreached marks an entry whose delete the pass did not get to run.
var errUnreached = errors.New("cacheguard: consistency: delete not reached before the claim's deadline")

// held is a claimed entry, decoded.
type held struct {
	id string
	e  entry
}

// runEntries runs the deletes of entries and returns each one's outcome.
func (q *Queue) runEntries(ctx context.Context, t *Target, entries []held) []error {
	errs := make([]error, len(entries))
	if len(entries) == 0 {
		return errs
	}
	var keys []string
	seen := make(map[string]struct{})
	for _, h := range entries {
		for _, k := range h.e.Keys {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
	}
	dctx, cancel := context.WithTimeout(ctx, q.cfg.timeout)
	err := t.run(dctx, keys)
	cancel()
	if err == nil || len(entries) == 1 || ctx.Err() != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	pass, cancel := context.WithTimeout(ctx, q.cfg.visibility-2*q.cfg.timeout)
	defer cancel()
	sem := make(chan struct{}, isolateParallel)
	var wg sync.WaitGroup
	for i, h := range entries {
		select {
		case sem <- struct{}{}:
		case <-pass.Done():
		}
		if pass.Err() != nil {
			errs[i] = errUnreached
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ectx, cancel := context.WithTimeout(pass, q.cfg.timeout)
			defer cancel()
			err := t.run(ectx, h.e.Keys)
			if err != nil && pass.Err() != nil && ctx.Err() == nil {
				err = errUnreached
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errs
}
