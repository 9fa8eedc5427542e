package hotkey

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// stream simulates 50k reads/s in ticks of 100ms over 10k background keys,
// each far too cold to be hot, plus one key "hot" taking a given share.
type stream struct {
	rng  *rand.Rand
	keys []string
}

const (
	readsPerSec = 50_000
	streamTick  = 100 * time.Millisecond
	perTick     = readsPerSec / 10
)

func newStream() *stream {
	return &stream{rng: rand.New(rand.NewPCG(3, 4)), keys: keyNames(10_000)}
}

// run records one tick of traffic, moves the clock on and ticks.
func (s *stream) run(d *Detector, clk *fakeClock, hotShare float64) {
	for range perTick {
		if s.rng.Float64() < hotShare {
			d.Record("hot")
		} else {
			d.Record(s.keys[s.rng.IntN(len(s.keys))])
		}
	}
	clk.Advance(streamTick)
	d.Tick()
}

// TestPromotionAndDemotion drives a key from nothing to 20% of a 50k reads/s
// stream and back to nothing, with a one second window of ten ticks, and
// checks that it is promoted within one window of the jump, stays hot while
// it is, and is demoted within one window of cooling, with one event each.
func TestPromotionAndDemotion(t *testing.T) {
	const windowTicks = 10
	cases := []struct {
		name   string
		opts   []Option
		promo  int // tick after the jump at which the threshold is reached
		demote int // tick after cooling at which it is no longer met
	}{
		// 1000 of 50000 accesses per window per tick of heat: 10% after 5.
		{"share 10%", []Option{WithMinCount(0), WithMinShare(0.1)}, 5, 6},
		// 2000 accesses after 2 ticks; under 2000 after 9 ticks of cold.
		{"count 2000", []Option{WithMinCount(2000)}, 2, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var events []Event
			d, clk := newManual(t, append(tc.opts,
				WithWindow(windowTicks*streamTick), WithTick(streamTick),
				WithOnChange(func(e Event) { events = append(events, e) }))...)
			s := newStream()

			for range windowTicks { // background only: nothing is hot
				s.run(d, clk, 0)
				if top := d.Top(0); len(top) != 0 {
					t.Fatalf("background alone made %v hot", top)
				}
			}

			promoted := 0
			for i := 1; i <= 2*windowTicks; i++ {
				s.run(d, clk, 0.2)
				switch hot := d.IsHot("hot"); {
				case hot && promoted == 0:
					promoted = i
				case !hot && promoted != 0:
					t.Fatalf("demoted at tick %d while still at 20%%", i)
				}
			}
			t.Logf("promoted %d ticks (%v) after the jump to 20%% of %d reads/s", promoted,
				time.Duration(promoted)*streamTick, readsPerSec)
			if promoted == 0 || promoted > windowTicks {
				t.Fatalf("promoted at tick %d, want within one window (%d ticks)", promoted, windowTicks)
			}
			if promoted < tc.promo {
				t.Errorf("promoted at tick %d, before the threshold could be reached (tick %d)", promoted, tc.promo)
			}
			if top := d.Top(1); len(top) != 1 || top[0].Key != "hot" {
				t.Errorf("Top(1) = %v, want the hot key", top)
			}

			demoted := 0
			for i := 1; i <= 2*windowTicks && demoted == 0; i++ {
				s.run(d, clk, 0)
				if !d.IsHot("hot") {
					demoted = i
				}
			}
			t.Logf("demoted %d ticks (%v) after cooling", demoted, time.Duration(demoted)*streamTick)
			if demoted == 0 || demoted > windowTicks {
				t.Fatalf("demoted at tick %d, want within one window (%d ticks)", demoted, windowTicks)
			}
			if demoted < tc.demote {
				t.Errorf("demoted at tick %d, before the count fell under the threshold (tick %d)", demoted, tc.demote)
			}

			const want = "[hot:true hot:false]"
			got := "["
			for i, e := range events {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%s:%v", e.Key, e.Hot)
			}
			if got += "]"; got != want {
				t.Fatalf("events %s, want %s", got, want)
			}
			// The key is promoted by the access that crosses the
			// threshold, during the tick's traffic, before the clock
			// moves on: the event carries that time.
			start := newFakeClock().Now()
			if at := events[0].At.Sub(start); at != time.Duration(windowTicks+promoted-1)*streamTick {
				t.Errorf("promotion event at %v, want %v", at, time.Duration(windowTicks+promoted-1)*streamTick)
			}
			if events[0].Count < 1000*uint64(promoted)*9/10 {
				t.Errorf("promotion event count %d, want about %d", events[0].Count, 1000*promoted)
			}
		})
	}
}

// TestWindowSlidesExactly pins what "one window" means: accesses count for
// the tick in progress and the next window of whole ticks, then vanish.
func TestWindowSlidesExactly(t *testing.T) {
	d, clk := newManual(t, WithMinCount(1), WithWindow(time.Second), WithTick(100*time.Millisecond))
	for range 300 {
		d.Record("a")
	}
	clk.Advance(50 * time.Millisecond) // mid-tick: not a tick boundary yet
	d.Tick()
	if top := d.Top(0); len(top) != 1 || top[0] != (Entry{"a", 300}) {
		t.Fatalf("Top = %v, want [{a 300}]", top)
	}
	for i := 1; i <= 10; i++ {
		clk.Advance(100 * time.Millisecond)
		d.Tick()
		if !d.IsHot("a") {
			t.Fatalf("a left the window after %d ticks, want 10", i)
		}
	}
	clk.Advance(100 * time.Millisecond)
	d.Tick()
	if d.IsHot("a") || len(d.Top(0)) != 0 {
		t.Fatalf("a still hot after 11 ticks: %v", d.Top(0))
	}
}

// TestClockJumps checks that a long pause (a clock jump past the window)
// forgets everything at once, and that a clock stepping back changes nothing.
func TestClockJumps(t *testing.T) {
	d, clk := newManual(t, WithMinCount(1))
	for range 50 {
		d.Record("a")
	}
	clk.Advance(-time.Hour)
	d.Tick()
	if !d.IsHot("a") {
		t.Fatal("a not hot after the clock stepped back")
	}
	clk.Advance(time.Hour + 10*time.Minute)
	d.Tick()
	if d.IsHot("a") {
		t.Fatal("a still hot ten minutes later")
	}
	// The rings are consistent after the jump: new traffic counts from zero.
	for range 7 {
		d.Record("a")
	}
	d.Tick()
	if top := d.Top(0); len(top) != 1 || top[0] != (Entry{"a", 7}) {
		t.Fatalf("Top = %v, want [{a 7}]", top)
	}
}

// TestTopCounts checks that Top orders keys by count, cuts at n and at k, and
// reports exact counts for keys tracked from their first access.
func TestTopCounts(t *testing.T) {
	d, _ := newManual(t, WithMinCount(50), WithK(3))
	for key, n := range map[string]int{"a": 300, "b": 200, "c": 100, "d": 90, "e": 10} {
		for range n {
			d.Record(key)
		}
	}
	d.Tick()
	want := []Entry{{"a", 300}, {"b", 200}, {"c", 100}}
	if got := d.Top(0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Top(0) = %v, want %v (k = 3)", got, want)
	}
	if got := d.Top(2); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
		t.Fatalf("Top(2) = %v, want %v", got, want[:2])
	}
	if d.IsHot("d") || d.IsHot("e") {
		t.Fatal("keys beyond k reported hot")
	}
	got := d.Top(0)
	got[0].Key = "mutated"
	if d.Top(1)[0].Key != "a" {
		t.Fatal("Top returned the detector's own slice")
	}
}

// TestMinCountAndShareTogether checks that a hot key meets both thresholds.
func TestMinCountAndShareTogether(t *testing.T) {
	d, _ := newManual(t, WithMinCount(100), WithMinShare(0.5))
	for range 99 {
		d.Record("a") // all of the traffic, but under the count
	}
	d.Tick()
	if d.IsHot("a") {
		t.Fatal("a hot under the minimum count")
	}
	d.Record("a")
	for range 101 {
		d.Record("b")
	}
	d.Tick()
	// Both are over the count; b has 101 of 201 accesses, a just under half.
	if !d.IsHot("b") || d.IsHot("a") {
		t.Fatalf("Top = %v, want only b", d.Top(0))
	}
}

// TestSampling checks that sampled counts are scaled back to accesses.
func TestSampling(t *testing.T) {
	d, _ := newManual(t, WithSampling(4), WithMinCount(1000))
	const n = 40_000
	for range n {
		d.Record("a")
	}
	d.Tick()
	top := d.Top(0)
	if len(top) != 1 || top[0].Key != "a" {
		t.Fatalf("Top = %v, want a", top)
	}
	// 10000 expected samples have a standard deviation of 87: 5% is > 20 of them.
	if c := top[0].Count; c < n*95/100 || c > n*105/100 || c%4 != 0 {
		t.Fatalf("count %d, want a multiple of 4 within 5%% of %d", c, n)
	}
}

// TestCooledKeyStartsOver checks that a key which entered the tracked set
// on the sketch's estimate, then was silent for a window and dropped, comes
// back with only its new accesses: the sketch must not remember traffic that
// has left the window.
func TestCooledKeyStartsOver(t *testing.T) {
	d, clk := newManual(t, WithMinCount(1), WithK(1), withShards(1))
	// Fill the shard's tracked set (k+16 keys) so that "old" can only get
	// in by its estimate beating the smallest of them.
	for i := range 17 {
		for range 2000 {
			d.Record(fmt.Sprint("filler:", i))
		}
	}
	for range 3000 {
		d.Record("old")
	}
	d.Tick()
	if top := d.Top(0); len(top) != 1 || top[0].Key != "old" || top[0].Count < 2000 {
		t.Fatalf("Top = %v, want old tracked after beating 2000", top)
	}
	for range 11 { // the tick in progress, then one whole window
		clk.Advance(defaultTick)
		d.Tick()
	}
	if d.IsHot("old") {
		t.Fatal("old still hot after a silent window")
	}
	d.Record("old")
	d.Tick()
	if top := d.Top(0); len(top) != 1 || top[0] != (Entry{"old", 1}) {
		t.Fatalf("Top = %v, want [{old 1}]", top)
	}
}
