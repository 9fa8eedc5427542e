package hotkey

import (
	"strings"
	"testing"
)

// recordAll records each key n times and ticks.
func recordAll(d *Detector, n int, keys ...string) {
	for range n {
		for _, k := range keys {
			d.Record(k)
		}
	}
	d.Tick()
}

func TestRules(t *testing.T) {
	keys := []string{"user:1", "session:1", "item:1", "user:2:lock"}
	cases := []struct {
		name string
		opts []Option
		hot  []string
	}{
		{"none", nil, keys},
		{"deny prefix", []Option{WithDenyPrefix("session:", "item:")}, []string{"user:1", "user:2:lock"}},
		{"allow prefix", []Option{WithAllowPrefix("user:")}, []string{"user:1", "user:2:lock"}},
		{"allow twice", []Option{WithAllowPrefix("user:"), WithAllowPrefix("item:")}, []string{"user:1", "item:1", "user:2:lock"}},
		{"deny beats allow", []Option{WithAllowPrefix("user:"), WithDenyPrefix("user:2")}, []string{"user:1"}},
		{"filter", []Option{WithFilter(func(k string) bool { return !strings.HasSuffix(k, ":lock") })},
			[]string{"user:1", "session:1", "item:1"}},
		{"filter and prefix", []Option{
			WithFilter(func(k string) bool { return !strings.HasSuffix(k, ":lock") }),
			WithFilter(func(k string) bool { return k != "item:1" }),
			WithDenyPrefix("session:"),
		}, []string{"user:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newManual(t, append(tc.opts, WithMinCount(100))...)
			recordAll(d, 200, keys...)
			want := map[string]bool{}
			for _, k := range tc.hot {
				want[k] = true
			}
			for _, k := range keys {
				if d.IsHot(k) != want[k] {
					t.Errorf("IsHot(%q) = %v, want %v", k, d.IsHot(k), want[k])
				}
			}
			if top := d.Top(0); len(top) != len(tc.hot) {
				t.Errorf("Top = %v, want %d keys %v", top, len(tc.hot), tc.hot)
			}
		})
	}
}

// TestDeniedTrafficCountsInTotal checks that excluded keys still make up the
// traffic a share is measured against: a key with 40% of all accesses is not
// over a 60% share because the other 60% were denied.
func TestDeniedTrafficCountsInTotal(t *testing.T) {
	d, _ := newManual(t, WithDenyPrefix("session:"), WithMinCount(0), WithMinShare(0.6))
	for range 100 {
		recordAll(d, 2, "user:1")
		recordAll(d, 3, "session:1")
	}
	if d.IsHot("user:1") {
		t.Fatal("user:1 hot with 40% of the traffic against a 60% share")
	}
	recordAll(d, 1000, "user:1") // now 1200 of 1500
	if !d.IsHot("user:1") {
		t.Fatalf("user:1 not hot with 80%% of the traffic: %v", d.Top(0))
	}
}
