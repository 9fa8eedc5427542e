package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A lease extension that gets no reply (the connection went silent for a
// moment) must not cost the lease: the holder gives up on that attempt in
// time and tries again, so while its slow loader runs no other process
// takes the lease over and loads too. Before, the extension waited for the
// client's read timeout (3 s, longer than the lease), the lease lapsed, and
// the waiting process loaded a second time. It holds with the recommended
// client settings (context deadlines bound socket reads) and with go-redis's
// defaults, where only giving up on the call bounds the attempt.
func TestKeepAliveSurvivesAFailedExtension(t *testing.T) {
	for _, ctxTimeout := range []bool{true, false} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeout), func(t *testing.T) {
			testKeepAliveSurvivesAFailedExtension(t, ctxTimeout)
		})
	}
}

func testKeepAliveSurvivesAFailedExtension(t *testing.T, ctxTimeout bool) {
	srv, direct := redistest.RealSingle(t)
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	viaProxy := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ContextTimeoutEnabled: ctxTimeout})
	t.Cleanup(func() { viaProxy.Close() })

	const lease = 1500 * time.Millisecond
	holder := newCache[string](t, viaProxy, WithFillLease(lease), WithWait(30*time.Second))
	other := newCache[string](t, direct, WithPrefix(prefixFor(t)), WithFillLease(lease), WithWait(30*time.Second))

	var loads atomic.Int64
	entered := make(chan struct{})
	recovered := make(chan struct{}) // an extension succeeded after a failed one
	second := make(chan struct{})    // a second load started: the lease was lost
	var failed atomic.Bool
	var once, secondOnce sync.Once
	holder.hooks().OnExtend = func(_ string, ok bool, _ error) {
		switch {
		case !ok && failed.CompareAndSwap(false, true):
			p.Heal() // one attempt lost, then the link works again
		case ok && failed.Load():
			once.Do(func() { close(recovered) })
		}
	}
	load := func(context.Context, string) (string, error) {
		if loads.Add(1) > 1 {
			secondOnce.Do(func() { close(second) })
			return "second", nil
		}
		close(entered)
		select {
		case <-recovered:
		case <-second:
		}
		return "first", nil
	}

	got := make(chan string, 1)
	go func() {
		v, err := holder.Get(context.Background(), "k", load)
		if err != nil {
			t.Errorf("holder Get: %v", err)
		}
		got <- v
	}()
	<-entered
	p.Blackhole(faultproxy.Both) // the next extension gets no reply
	waiting := make(chan struct{})
	var waitOnce atomic.Bool
	other.hooks().OnLeaseWait = func(string) {
		if waitOnce.CompareAndSwap(false, true) {
			close(waiting)
		}
	}
	otherGot := make(chan string, 1)
	go func() {
		v, err := other.Get(context.Background(), "k", load)
		if err != nil {
			t.Errorf("other Get: %v", err)
		}
		otherGot <- v
	}()
	<-waiting
	hv, ov := <-got, <-otherGot
	if n := loads.Load(); n != 1 {
		t.Fatalf("loader ran %d times, want 1: the lease was lost after one failed extension", n)
	}
	if hv != "first" || ov != "first" {
		t.Fatalf("holder got %q, the other process %q, want both first", hv, ov)
	}
}
