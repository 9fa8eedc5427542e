package lock

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Observer is told of every acquisition, release and loss of a lock, to build
// metrics from (the otel module turns them into wait and hold time
// histograms and a lost-lock counter). Install it with WithObserver.
//
// Acquired is called when Lock, TryLock (or their RWMutex, Semaphore and
// Redlock forms) succeed, with how long the call took: for Lock, the time
// spent waiting for the lock. Released is called when a handle is unlocked,
// with how long it was held. Lost is called once per lost hold, when the
// lock is found gone before it was unlocked (its lease ran out, a renewal or
// an Unlock found another owner); a hold ended by Client.Close is not lost.
//
// Acquired and Released run on the caller's goroutine; Lost runs on the
// watchdog's, or the caller's, with the client's internal bookkeeping lock
// held: every method must be quick, safe for concurrent use, and must not
// call into this package. A panic is recovered, logged, and counted in
// Stats.ObserverPanics; the lock itself is unaffected.
type Observer interface {
	Acquired(name string, waited time.Duration)
	Released(name string, held time.Duration)
	Lost(name string)
}

// WithObserver reports the client's (or one lock's) acquisitions, releases
// and losses to o. Without it the lock paths pay one nil check.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// Stats are a Client's (or Redlock's) counters since New.
type Stats struct {
	ObserverPanics uint64 // panics of the Observer, recovered
}

// Stats returns the counters.
func (e *engine) Stats() Stats { return Stats{ObserverPanics: e.observerPanics.Load()} }

// watcher is the Observer of one acquisition, with what reporting needs.
type watcher struct {
	o    Observer
	e    *engine
	name string
	at   time.Time // when the lock was obtained
	lost atomic.Bool
}

// call runs f, recovering a panic of the Observer.
func (w *watcher) call(what string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			w.e.observerPanics.Add(1)
			w.e.report.Logger.Warn("cacheguard: lock: observer panicked", "lock", w.name, "in", what, "panic", fmt.Sprint(p))
		}
	}()
	f()
}

// observeObtain, deferred by obtain as observeObtain(cfg, b)(&hd, &err),
// reports a successful acquisition and attaches the Observer to the handle
// and its hold. Without an Observer it costs a nil check.
func (e *engine) observeObtain(cfg *config, b backend) func(hd **Handle, err *error) {
	if cfg.observer == nil {
		return noObtain
	}
	start := time.Now()
	return func(hd **Handle, err *error) {
		if *err != nil || *hd == nil {
			return
		}
		w := &watcher{o: cfg.observer, e: e, name: b.name(), at: time.Now()}
		(*hd).watch = w
		w.call("Acquired", func() { w.o.Acquired(w.name, w.at.Sub(start)) })
		e.wd.watchHold((*hd).h, w)
	}
}

func noObtain(**Handle, *error) {}

// watchHold gives h an Observer for its loss, if it has none yet (the
// handles of a reentrant owner share one hold); a hold that ended lost before
// this is reported now.
func (wd *watchdog) watchHold(h *hold, w *watcher) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if h.watch == nil {
		h.watch = w
	}
	if h.err != nil {
		h.observeEnd(h.err)
	}
}

// observeEnd reports the end of h if it was lost. It runs under wd.mu.
func (h *hold) observeEnd(cause error) {
	w := h.watch
	if w == nil || !errors.Is(cause, ErrLost) || errors.Is(cause, ErrClosed) || !w.lost.CompareAndSwap(false, true) {
		return
	}
	w.call("Lost", func() { w.o.Lost(w.name) })
}

// observeReleased reports the Unlock of hd.
func (hd *Handle) observeReleased() {
	if w := hd.watch; w != nil {
		w.call("Released", func() { w.o.Released(w.name, time.Since(w.at)) })
	}
}
