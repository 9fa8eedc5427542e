package call

import (
	"sync"
	"time"
)

// Flight counts calls running on goroutines of their own, those abandoned at
// a deadline included. Unlike a sync.WaitGroup it may gain calls while Wait
// runs (a release can start at any time), and its wait needs no goroutine,
// so nothing of it outlives a bounded wait. The zero value is ready to use;
// a nil *Flight counts nothing.
type Flight struct {
	mu      sync.Mutex
	n       int
	idle    chan struct{} // closed when n drops to 0; nil while n is 0
	stopped bool          // TryGo refuses: see Stop
}

func (f *Flight) add() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.addLocked()
	f.mu.Unlock()
}

// addLocked counts one more call; f.mu is held.
func (f *Flight) addLocked() {
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *Flight) done() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// Wait waits until no counted call runs, at most d; it reports whether none
// does.
func (f *Flight) Wait(d time.Duration) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// Go runs fn on a goroutine of its own, counted until fn returns.
func (f *Flight) Go(fn func()) {
	f.add()
	go func() {
		defer f.done()
		fn()
	}()
}

// Stop makes every later TryGo refuse, so that a Wait after it can only see
// fewer calls: its owner closing calls Stop, then Wait, and whatever would
// have started a goroutine afterwards runs on its caller's instead. Go is
// not affected (a call bounded by a deadline needs its goroutine).
func (f *Flight) Stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

// TryGo is Go until Stop; after it, TryGo runs nothing and returns false.
func (f *Flight) TryGo(fn func()) bool {
	if f == nil {
		go fn()
		return true
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return false
	}
	f.addLocked()
	f.mu.Unlock()
	go func() {
		defer f.done()
		fn()
	}()
	return true
}
