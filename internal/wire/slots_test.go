package wire

import "testing"

// Slot agrees with Redis's CLUSTER KEYSLOT on its documented examples, and
// every slot has a tag that leads to it.
func TestSlots(t *testing.T) {
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443,
		"{user1000}.followers": 3443} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if Slot("foo{}{bar}") == Slot("bar") {
		t.Error(`an empty first tag must not make "bar" the tag`)
	}
	for s := range Slots {
		if got := Slot("x{" + SlotTag(s) + "}y"); got != s {
			t.Fatalf("SlotTag(%d) = %q leads to slot %d", s, SlotTag(s), got)
		}
	}
}
