package hotkey

import "testing"

// Stats counts a promotion and a demotion without a WithOnChange callback.
func TestStatsCountPromotionsWithoutCallback(t *testing.T) {
	clk := newFakeClock()
	d, err := New(WithClock(clk.Now), WithMinCount(10), WithWindow(200e6), WithTick(100e6))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 50 {
		d.Record("hot")
	}
	clk.Advance(100e6)
	d.Tick()
	if st := d.Stats(); st.Promoted != 1 || st.Hot != 1 || st.Demoted != 0 {
		t.Fatalf("after promotion: %+v, want 1 promoted, 1 hot", st)
	}
	for range 4 {
		clk.Advance(100e6)
		d.Tick()
	}
	if st := d.Stats(); st.Promoted != 1 || st.Demoted != 1 || st.Hot != 0 {
		t.Fatalf("after the window passed: %+v, want 1 promoted, 1 demoted, none hot", st)
	}
}
