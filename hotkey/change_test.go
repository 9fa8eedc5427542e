package hotkey

import (
	"testing"
	"time"
)

// TestMassDemotionEvents demotes many keys in one tick, some of them still
// tracked (under the threshold) and some gone, and checks that every one is
// reported once, with its count in the window when it is still tracked and 0
// when it is not.
func TestMassDemotionEvents(t *testing.T) {
	const n = 512
	var events []Event
	d, clk := newManual(t, WithK(2*n), WithMinCount(3), WithWindow(100*time.Millisecond),
		WithTick(100*time.Millisecond), WithOnChange(func(e Event) { events = append(events, e) }))
	keys := keyNames(n)
	for _, k := range keys {
		for range 3 {
			d.Record(k)
		}
	}
	clk.Advance(100 * time.Millisecond)
	d.Tick()
	if len(events) != n {
		t.Fatalf("%d promotions, want %d", len(events), n)
	}
	events = nil
	// The even keys stay tracked with 2 accesses (under 3); the odd ones
	// are not accessed at all and leave.
	for i, k := range keys {
		if i%2 == 0 {
			d.Record(k)
			d.Record(k)
		}
	}
	clk.Advance(100 * time.Millisecond)
	d.Tick()
	if len(events) != n {
		t.Fatalf("%d demotions, want %d", len(events), n)
	}
	seen := map[string]bool{}
	for _, e := range events {
		if e.Hot || seen[e.Key] {
			t.Fatalf("unexpected event %+v", e)
		}
		seen[e.Key] = true
		var i int
		if _, err := fmtSscan(e.Key, &i); err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		if i%2 == 0 {
			want = 2
		}
		if e.Count != want {
			t.Errorf("%s demoted with count %d, want %d", e.Key, e.Count, want)
		}
	}
}
