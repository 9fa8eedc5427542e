package hotkey

import (
	"sync"
	"testing"
	"time"
)

// TestTickingGoroutine drives the detector's own goroutine with a tick source
// the test controls, and checks that Close stops it.
func TestTickingGoroutine(t *testing.T) {
	clk := newFakeClock()
	ticks := make(chan time.Time)
	events := make(chan Event, 4)
	d, err := New(WithClock(clk.Now), withTicks(ticks), WithMinCount(10),
		WithOnChange(func(e Event) { events <- e }))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		d.Record("a")
	}
	ticks <- clk.Now() // received by the goroutine, which then ticks
	if e := <-events; e.Key != "a" || !e.Hot || e.Count != 20 {
		t.Fatalf("event %+v, want a promoted with 20", e)
	}
	if !d.IsHot("a") {
		t.Fatal("a not hot after the event")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	default:
		t.Fatal("goroutine still running after Close returned")
	}
	if err := d.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	select {
	case ticks <- clk.Now():
		t.Fatal("a tick was received after Close")
	default:
	}
	if !d.IsHot("a") {
		t.Fatal("Close dropped the last hot set")
	}
}

// TestManualClockStartsNoGoroutine checks that WithClock hands ticking to the
// caller.
func TestManualClockStartsNoGoroutine(t *testing.T) {
	d, _ := newManual(t)
	if d.done != nil {
		t.Fatal("a goroutine was started with WithClock")
	}
}

func TestNilDetector(t *testing.T) {
	var d *Detector
	d.Record("a")
	d.Tick()
	if d.IsHot("a") || d.Top(0) != nil || d.Close() != nil {
		t.Fatal("nil detector is not inert")
	}
}

// TestConcurrentUse records from several goroutines while others tick and
// read, and checks that no access was lost.
func TestConcurrentUse(t *testing.T) {
	d, clk := newManual(t, WithMinCount(1), WithWindow(time.Hour), WithTick(time.Minute))
	const (
		writers = 4
		each    = 10_000
	)
	keys := keyNames(50)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			clk.Advance(time.Second) // within the hour: nothing leaves the window
			d.Tick()
			d.IsHot("x")
			d.Top(5)
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				d.Record("x")
				d.Record(keys[(i+w)%len(keys)])
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	d.Tick()
	top := d.Top(0)
	if len(top) == 0 || top[0] != (Entry{"x", writers * each}) {
		t.Fatalf("Top[0] = %v, want {x %d}", top, writers*each)
	}
	var sum uint64
	for _, e := range top[1:] {
		sum += e.Count
	}
	if sum != writers*each {
		t.Fatalf("other keys counted %d, want %d", sum, writers*each)
	}
}
