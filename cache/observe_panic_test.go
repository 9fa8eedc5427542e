package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// panicky panics at one point of the observation protocol.
type panicky struct{ at string }

func (p panicky) StartGet(ctx context.Context, op string, keys []string) (context.Context, func(GetInfo)) {
	if p.at == "StartGet" {
		panic("observer broke in StartGet")
	}
	return ctx, func(GetInfo) {
		if p.at == "end" {
			panic("observer broke in end")
		}
	}
}

func (p panicky) StartLoad(ctx context.Context, keys []string) (context.Context, func(error)) {
	if p.at == "StartLoad" {
		panic("observer broke in StartLoad")
	}
	return ctx, func(error) {
		if p.at == "done" {
			panic("observer broke in done")
		}
	}
}

func (p panicky) ValueSize(string, int) {
	if p.at == "ValueSize" {
		panic("observer broke in ValueSize")
	}
}

// A panicking Observer fails neither the call nor the cache: the value is
// loaded once, cached (the fill's lease is not left behind) and served, and
// the panic is counted and reported.
func TestObserverPanicIsContained(t *testing.T) {
	_, rdb := newSingle(t)
	for _, at := range []string{"StartGet", "end", "StartLoad", "done", "ValueSize"} {
		t.Run(at, func(t *testing.T) {
			var mu sync.Mutex
			var reported []error
			c := newCache[string](t, rdb, WithObserver(panicky{at}), WithErrorHandler(func(err error) {
				mu.Lock()
				reported = append(reported, err)
				mu.Unlock()
			}))
			ctx := context.Background()
			l := &countingLoader[string]{rows: map[string]string{"k": "v", "m": "w"}}
			for range 2 {
				if v, err := c.Get(ctx, "k", l.load); err != nil || v != "v" {
					t.Fatalf("Get = %q, %v; want v", v, err)
				}
			}
			if n := l.calls.Load(); n != 1 {
				t.Fatalf("loader ran %d times, want 1 (the fill must land despite the panic)", n)
			}
			got, err := c.GetMany(ctx, []string{"k", "m"}, func(ctx context.Context, ks []string) (map[string]string, error) {
				out := map[string]string{}
				for _, k := range ks {
					v, err := l.load(ctx, k)
					if err == nil {
						out[k] = v
					}
				}
				return out, nil
			})
			if err != nil || got["k"] != "v" || got["m"] != "w" {
				t.Fatalf("GetMany = %v, %v", got, err)
			}
			st := c.Stats()
			if st.ObserverPanics == 0 {
				t.Fatal("ObserverPanics = 0 after panics")
			}
			mu.Lock()
			defer mu.Unlock()
			if uint64(len(reported)) != st.ObserverPanics {
				t.Fatalf("%d panics reported to the error handler, %d counted", len(reported), st.ObserverPanics)
			}
			for _, err := range reported {
				if !strings.Contains(err.Error(), "observer broke in "+at) || errors.Is(err, ErrRedis) {
					t.Errorf("reported %v", err)
				}
			}
		})
	}
}
