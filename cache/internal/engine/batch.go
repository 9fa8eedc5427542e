package engine

import (
	"fmt"
	"sync"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// batch collects what a GetMany's own reads and fills found, per key: a
// result, or the error of that key alone.
type batch[V any] struct {
	out  map[string]V
	res  map[string]flight.Result[V]
	errs map[string]error
	// end hands a decided key's result to whoever joined its read at
	// once, not when the batch's slowest key is decided.
	end func(k string, res flight.Result[V])
	// mu guards res and errs of a batch filled detached (fill.go).
	mu *sync.Mutex
}

// fail records err as k's error. An error that ends a whole step (a lost
// pipeline, the caller's context) is not recorded key by key: leadMany
// gives it to every key left without a result or an error of its own.
func (b *batch[V]) fail(k string, err error) {
	if b.mu != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if _, ok := b.res[k]; !ok {
		b.errs[k] = err
	}
}

func (b *batch[V]) put(k string, r entry.Result[V], tier telemetry.Tier) {
	if b.mu != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if !r.Null && b.out != nil {
		b.out[k] = r.V
	}
	b.res[k] = flight.Result[V]{R: r, Tier: tier}
	if b.end != nil {
		b.end(k, b.res[k])
	}
}

// endUndecided ends the flights of keys the batch left without a result,
// with their error, or err (gone if it is a context's).
func (b *batch[V]) endUndecided(keys []string, err error) {
	if b.end == nil {
		return
	}
	b.mu.Lock()
	var ends []string
	var kerrs []error
	for _, k := range keys {
		if _, ok := b.res[k]; ok {
			continue
		}
		kerr := b.errs[k]
		if kerr == nil {
			kerr = err
		}
		if kerr == nil {
			kerr = fmt.Errorf("cacheguard: cache: %q left undecided", k)
		}
		ends, kerrs = append(ends, k), append(kerrs, kerr)
	}
	b.mu.Unlock()
	for i, k := range ends {
		res := flight.Result[V]{Err: kerrs[i]}
		if errs.IsCtx(kerrs[i]) {
			res = flight.Result[V]{Gone: true}
		}
		b.end(k, res)
	}
}
