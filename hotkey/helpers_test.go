package hotkey

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// newManual returns a detector driven by a fake clock, with a fixed shard
// count so results do not depend on the machine.
func newManual(t testing.TB, opts ...Option) (*Detector, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	d, err := New(append([]Option{WithClock(clk.Now), withShards(8)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, clk
}

// keyNames returns n distinct keys.
func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
	}
	return keys
}

// fmtSscan reads the number of a key made by keyNames.
func fmtSscan(key string, i *int) (int, error) {
	return fmt.Sscanf(key, "user:%d", i)
}
