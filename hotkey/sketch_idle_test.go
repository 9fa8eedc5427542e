package hotkey

import "testing"

// An emptied sketch is known to be empty, so that scaling it is free; any
// access makes it live again.
func TestSketchLive(t *testing.T) {
	s := newSketch(64, 1)
	if s.live {
		t.Fatal("a new sketch is live")
	}
	s.add(42)
	s.add(42)
	if !s.live {
		t.Fatal("a sketch with counts is not live")
	}
	half := uint64(1 << 15)
	s.scale(half) // 2 -> 1
	if !s.live {
		t.Fatal("a sketch with a count left is not live")
	}
	s.scale(half) // 1 -> 0
	if s.live {
		t.Fatal("an emptied sketch is still live")
	}
	for _, b := range s.buckets {
		if b.count != 0 {
			t.Fatalf("count %d left in an emptied sketch", b.count)
		}
	}
	if est := s.add(7); est != 1 || !s.live {
		t.Fatalf("after emptying: estimate %d, live %v", est, s.live)
	}
}
