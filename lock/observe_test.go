package lock

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// recorder is an Observer keeping what it was told.
type recorder struct {
	mu       sync.Mutex
	acquired map[string][]time.Duration
	released map[string][]time.Duration
	lost     map[string]int
	panics   bool
}

func newRecorder() *recorder {
	return &recorder{acquired: map[string][]time.Duration{}, released: map[string][]time.Duration{}, lost: map[string]int{}}
}

func (r *recorder) Acquired(name string, waited time.Duration) {
	r.mu.Lock()
	r.acquired[name] = append(r.acquired[name], waited)
	r.mu.Unlock()
	if r.panics {
		panic("observer broke in Acquired")
	}
}

func (r *recorder) Released(name string, held time.Duration) {
	r.mu.Lock()
	r.released[name] = append(r.released[name], held)
	r.mu.Unlock()
	if r.panics {
		panic("observer broke in Released")
	}
}

func (r *recorder) Lost(name string) {
	r.mu.Lock()
	r.lost[name]++
	r.mu.Unlock()
	if r.panics {
		panic("observer broke in Lost")
	}
}

// A contended lock reports the waiter's wait, each hold's time, and the loss
// of a lock whose key was deleted under it; a panicking Observer changes
// nothing but Stats.ObserverPanics.
func TestObserverSeesWaitHoldAndLoss(t *testing.T) {
	for _, panics := range []bool{false, true} {
		name := map[bool]string{false: "observed", true: "panicky"}[panics]
		t.Run(name, func(t *testing.T) {
			_, rdb := redistest.Single(t)
			ctx := testCtx(t)
			rec := newRecorder()
			rec.panics = panics
			a := newClient(t, rdb, WithObserver(rec))
			b := newClient(t, rdb, WithObserver(rec))
			hook := hookWaiting(b.engine)

			ha, err := a.Mutex(name).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *Handle, 1)
			go func() {
				hb, err := b.Mutex(name).Lock(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- hb
			}()
			hook.next(t, name) // b is blocked behind a
			if err := ha.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			hb := <-got
			if hb == nil {
				t.FailNow()
			}
			// b's lock vanishes: its Unlock finds it gone.
			rdb.Del(ctx, "cacheguard:lock:{"+name+"}")
			if err := hb.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("unlock of a deleted lock: %v, want ErrNotHeld", err)
			}

			rec.mu.Lock()
			if n := len(rec.acquired[name]); n != 2 {
				rec.mu.Unlock()
				t.Fatalf("%d acquisitions reported, want 2", n)
			}
			if w := rec.acquired[name][1]; w <= 0 {
				t.Errorf("the waiter's wait = %v, want > 0", w)
			}
			if n := len(rec.released[name]); n != 2 {
				rec.mu.Unlock()
				t.Fatalf("%d releases reported, want 2", n)
			}
			if rec.lost[name] != 1 {
				t.Errorf("%d losses reported, want 1", rec.lost[name])
			}
			want := uint64(0)
			if panics {
				want = 5 // two Acquired, two Released, one Lost
			}
			if p := a.Stats().ObserverPanics + b.Stats().ObserverPanics; p != want {
				t.Errorf("ObserverPanics = %d, want %d", p, want)
			}
			rec.mu.Unlock()
			// The lock is free and usable after all this.
			h, err := a.Mutex(name).TryLock(ctx)
			if err != nil {
				t.Fatalf("TryLock after the observed run: %v", err)
			}
			h.Unlock(ctx)
		})
	}
}

// Closing a client ends its holds without reporting them lost.
func TestObserverCloseIsNotALoss(t *testing.T) {
	_, rdb := redistest.Single(t)
	ctx := testCtx(t)
	rec := newRecorder()
	c, err := New(rdb, WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("closing").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.lost) != 0 {
		t.Errorf("Close reported losses: %v", rec.lost)
	}
}
