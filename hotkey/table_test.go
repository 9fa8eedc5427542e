package hotkey

import (
	"math/rand/v2"
	"testing"
)

// TestTable checks the candidate table against a map under random inserts
// and deletes, with hashes crowded into few home slots so that probe runs
// wrap around the end and deletions must shift entries back.
func TestTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tb := newTable(16) // 32 slots
	ref := map[uint64]int{}
	for step := range 50_000 {
		h := uint64(rng.IntN(64))<<32 | uint64(rng.IntN(4)+28) // homes 28..31
		if _, ok := ref[h]; ok {
			tb.del(h)
			delete(ref, h)
		} else if len(ref) < 16 {
			tb.set(h, step)
			ref[h] = step
		}
		for k, v := range ref {
			if got := tb.get(k); got != v {
				t.Fatalf("step %d: get(%x) = %d, want %d", step, k, got, v)
			}
		}
		if got := tb.get(1<<40 | 29); got != -1 {
			t.Fatalf("step %d: absent hash found: %d", step, got)
		}
	}
}
