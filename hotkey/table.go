package hotkey

// table finds a shard's candidates by key hash. It is a small open-addressing
// hash table (linear probing, deletion by shifting back) rather than a Go map
// because Record looks it up on every access and the key is already hashed.
type table struct {
	slots []tableSlot
	mask  uint64
}

type tableSlot struct {
	hash uint64
	num  int32 // candidate number + 1; 0: empty
}

// newTable returns a table for up to n candidates, at most half full.
func newTable(n int) table {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return table{slots: make([]tableSlot, size), mask: uint64(size - 1)}
}

// find returns the slot holding h, or the empty slot where h would go.
func (t *table) find(h uint64) *tableSlot {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.num == 0 || s.hash == h {
			return s
		}
	}
}

// get returns the candidate number stored under h, or -1.
func (t *table) get(h uint64) int {
	return int(t.find(h).num) - 1
}

// set stores candidate number n under h, adding h if absent.
func (t *table) set(h uint64, n int) {
	*t.find(h) = tableSlot{hash: h, num: int32(n + 1)}
}

// del removes h, moving later entries of its probe run back so that every
// entry stays reachable from its home slot without tombstones.
func (t *table) del(h uint64) {
	i := h & t.mask
	for {
		if t.slots[i].num == 0 {
			return
		}
		if t.slots[i].hash == h {
			break
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.slots[j].num != 0; j = (j + 1) & t.mask {
		// Move the entry at j back to the hole at i unless its home slot
		// lies cyclically after i (then it would become unreachable).
		home := t.slots[j].hash & t.mask
		if (j-home)&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = tableSlot{}
}
