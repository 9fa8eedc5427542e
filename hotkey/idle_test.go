package hotkey

import (
	"sync/atomic"
	"testing"
	"time"
)

// idleProbe drives a detector's own goroutine with a tick source and a clock
// the test controls, and sees its ticks and pauses through the step hook.
type idleProbe struct {
	t      *testing.T
	d      *Detector
	clk    *fakeClock
	ticks  chan time.Time
	pauses chan string // "paused" / "resumed", in order
	events chan Event
	done   chan struct{} // the goroutine finished a Tick
	ticked atomic.Int64  // Ticks run
	// race, if set before the first tick, runs in the goroutine at each
	// step of a pause, to put a Record at that point.
	race func(step string)
}

func newIdleProbe(t *testing.T, opts ...Option) *idleProbe {
	p := &idleProbe{t: t, clk: newFakeClock(), ticks: make(chan time.Time),
		pauses: make(chan string, 16), events: make(chan Event, 64), done: make(chan struct{}, 1)}
	d, err := New(append([]Option{WithClock(p.clk.Now), withTicks(p.ticks), withShards(8),
		WithOnChange(func(e Event) { p.events <- e }),
		withTickSteps(func(step string) {
			switch step {
			case "taken":
				p.ticked.Add(1)
			case "ticked":
				p.done <- struct{}{}
			case "paused", "resumed":
				p.pauses <- step
			}
			if p.race != nil && (step == "pausing" || step == "paused") {
				p.race(step)
			}
		})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	p.d = d
	return p
}

// tick moves the clock one tick and hands the tick to the goroutine, then
// waits until that Tick has finished. It reports false, having handed over
// nothing, if the goroutine paused instead: a paused goroutine no longer
// receives ticks, so the send cannot win the select once "paused" is
// reported, and the answer does not depend on scheduling.
func (p *idleProbe) tick() bool {
	p.t.Helper()
	p.clk.Advance(100 * time.Millisecond)
	select {
	case p.ticks <- p.clk.Now():
		<-p.done
		return true
	case s := <-p.pauses:
		if s != "paused" {
			p.t.Fatalf("step %q, want paused", s)
		}
		return false
	}
}

// tickUntilPaused ticks until the goroutine pauses and returns the ticks it
// took.
func (p *idleProbe) tickUntilPaused(limit int) int {
	p.t.Helper()
	for n := 0; n < limit; n++ {
		if !p.tick() {
			return n
		}
	}
	p.t.Fatalf("the detector still ticks after %d ticks of no traffic", limit)
	return 0
}

func (p *idleProbe) event() Event {
	select {
	case e := <-p.events:
		return e
	default:
		p.t.Fatal("no event")
		return Event{}
	}
}

// TestIdleDetectorStopsTicking: once a key has cooled, left the window and
// the sketch, the ticking goroutine stops taking ticks; a Record wakes it,
// and the accesses that woke it count as they would have on a detector that
// never paused: same count, same promotion, same demotion tick.
func TestIdleDetectorStopsTicking(t *testing.T) {
	p := newIdleProbe(t, WithMinCount(10)) // window 1s, tick 100ms
	for range 20 {
		p.d.Record("a")
	}
	n := p.tickUntilPaused(100)
	// a leaves the window at the 11th tick (a count covers the tick in
	// progress and the 10 before it); the sketch empties with it.
	if n > 12 {
		t.Errorf("paused after %d ticks with no traffic, want within 12", n)
	}
	if e := p.event(); e.Key != "a" || !e.Hot || e.Count != 20 {
		t.Fatalf("event %+v, want a promoted with 20", e)
	}
	if e := p.event(); e.Key != "a" || e.Hot {
		t.Fatalf("event %+v, want a demoted", e)
	}
	ran := p.ticked.Load()
	for range 3 {
		p.clk.Advance(100 * time.Millisecond)
		select {
		case p.ticks <- p.clk.Now():
			t.Fatal("a paused detector took a tick")
		default:
		}
	}
	if got := p.ticked.Load(); got != ran {
		t.Fatalf("%d ticks ran while paused", got-ran)
	}

	// An hour later: without the rebase, the first tick would slide the
	// accesses that woke the detector out of the window.
	p.clk.Advance(time.Hour)
	for range 20 {
		p.d.Record("b")
	}
	if s := <-p.pauses; s != "resumed" {
		t.Fatalf("step %q after a Record, want resumed", s)
	}
	if !p.d.IsHot("b") {
		t.Fatal("b not promoted by the access that crossed the threshold")
	}
	ref, refClk := newManual(t, WithMinCount(10))
	for range 20 {
		ref.Record("b")
	}
	demoted := false
	for i := 1; i <= 30 && !demoted; i++ {
		refClk.Advance(100 * time.Millisecond)
		if !p.tick() {
			t.Fatalf("tick %d after waking: paused with b hot", i)
		}
		ref.Tick()
		if i == 1 {
			if e := p.event(); e.Key != "b" || !e.Hot || e.Count != 20 {
				t.Fatalf("event %+v, want b promoted with 20", e)
			}
			if top := p.d.Top(0); len(top) != 1 || top[0] != (Entry{"b", 20}) {
				t.Fatalf("Top = %v, want [{b 20}]", top)
			}
		}
		got, want := p.d.IsHot("b"), ref.IsHot("b")
		if got != want {
			t.Fatalf("tick %d after waking: b hot %v, on a detector that never paused %v", i, got, want)
		}
		demoted = !want
	}
	if !demoted {
		t.Fatal("b never demoted")
	}
	if e := p.event(); e.Key != "b" || e.Hot {
		t.Fatalf("event %+v, want b demoted", e)
	}
}

// TestIdlePauseWaitsForTheSketch: the detector does not pause while keys that
// were never counted exactly still hold counts in the sketch, which the
// ticks decay.
func TestIdlePauseWaitsForTheSketch(t *testing.T) {
	p := newIdleProbe(t, WithK(1), WithMinCount(1_000_000))
	keys := keyNames(5000) // far more than a shard tracks: most stay in the sketch
	for range 50 {
		for _, k := range keys {
			p.d.Record(k)
		}
	}
	n := p.tickUntilPaused(1000)
	if n <= 11 {
		t.Fatalf("paused after %d ticks, before the sketch had decayed", n)
	}
	if !p.d.quiet() {
		t.Fatal("paused while not empty")
	}
}

// TestIdleRealTicker runs the pause and wake-up on the real ticker: a new
// detector pauses at once; a Record wakes it, a key is promoted and demoted,
// the goroutine pauses again; twice.
func TestIdleRealTicker(t *testing.T) {
	pauses := make(chan string, 16)
	events := make(chan Event, 16)
	d, err := New(WithTick(2*time.Millisecond), WithWindow(100*time.Millisecond), WithMinCount(5),
		WithOnChange(func(e Event) { events <- e }),
		withTickSteps(func(step string) {
			if step == "paused" || step == "resumed" {
				pauses <- step
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// With nothing recorded, the first tick already finds it empty.
	if s := <-pauses; s != "paused" {
		t.Fatalf("step %q, want paused", s)
	}
	for round := range 2 {
		for range 5 {
			d.Record("a")
		}
		if s := <-pauses; s != "resumed" {
			t.Fatalf("round %d: step %q, want resumed", round, s)
		}
		if e := <-events; e.Key != "a" || !e.Hot {
			t.Fatalf("round %d: event %+v, want a promoted", round, e)
		}
		if e := <-events; e.Key != "a" || e.Hot {
			t.Fatalf("round %d: event %+v, want a demoted", round, e)
		}
		if s := <-pauses; s != "paused" {
			t.Fatalf("round %d: step %q, want paused", round, s)
		}
	}
}

// TestIdleRecordRacingThePause puts a Record at the two points where it can
// meet a pause: after the goroutine raised the idle flag but before it looked
// again (it must see the access and keep ticking), and after it decided to
// pause (the Record must wake it). Either way the access counts.
func TestIdleRecordRacingThePause(t *testing.T) {
	for _, at := range []string{"pausing", "paused"} {
		t.Run(at, func(t *testing.T) {
			p := newIdleProbe(t, WithMinCount(10))
			raced := false
			p.race = func(step string) {
				if step == at && !raced {
					raced = true
					p.d.Record("c")
				}
			}
			if !p.tick() { // an empty detector: it starts to pause after it
				t.Fatal("paused before the first tick")
			}
			if at == "paused" {
				if s := <-p.pauses; s != "paused" {
					t.Fatalf("step %q, want paused", s)
				}
				if s := <-p.pauses; s != "resumed" {
					t.Fatalf("step %q: the Record after the pause did not wake the goroutine", s)
				}
			} else if !p.tick() {
				t.Fatal("paused though a Record came in while it looked")
			}
			for range 9 {
				p.d.Record("c")
			}
			if !p.tick() {
				t.Fatal("paused with c hot")
			}
			if e := p.event(); e.Key != "c" || !e.Hot || e.Count != 10 {
				t.Fatalf("event %+v, want c promoted with 10: the racing Record was lost", e)
			}
			if n := p.tickUntilPaused(100); n > 12 {
				t.Fatalf("paused %d ticks after c's last access, want within 12", n)
			}
		})
	}
}
