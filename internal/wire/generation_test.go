package wire

import (
	"strings"
	"testing"
)

func TestEntryKeyKeepsHashTag(t *testing.T) {
	for _, gen := range []uint64{0, 1, 12345} {
		k := EntryKey("cart:", gen, "{user42}:items")
		if tag, ok := HashTag(k); !ok || tag != "user42" {
			t.Fatalf("gen %d: %q hashes by %q", gen, k, tag)
		}
	}
	if EntryKey("p:", 0, "k") != "p:k" {
		t.Fatal("generation 0 must keep the layout of a cache never cleared")
	}
	// The one user key of generation 0 that would collide is reserved.
	if !ReservedKey(strings.TrimPrefix(EntryKey("p:", 1, "k"), "p:")) {
		t.Fatal("keys of two generations collide")
	}
	if g, ok := ParseGenerationAnnouncement(GenerationAnnouncement(7)); !ok || g != 7 {
		t.Fatal(g, ok)
	}
	if _, ok := ParseGenerationAnnouncement("generation:7"); ok {
		t.Fatal("a user key taken for an announcement")
	}
}

func TestParseEntryKeyInvertsEntryKey(t *testing.T) {
	for _, gen := range []uint64{0, 1, 42} {
		for _, key := range []string{"k", "{user42}:cart", "", "a\xffb"} {
			rkey := EntryKey("app:", gen, key)
			g, k, ok := ParseEntryKey("app:", rkey)
			if !ok || g != gen || k != key {
				t.Errorf("ParseEntryKey(%q) = %d, %q, %v; want %d, %q", rkey, g, k, ok, gen, key)
			}
		}
	}
	for _, rkey := range []string{"other:k", "app:\xff1", "app:\xffx\xffk", "app:\xff0\xffk"} {
		if g, k, ok := ParseEntryKey("app:", rkey); ok {
			t.Errorf("ParseEntryKey(%q) = %d, %q, true; want not ok", rkey, g, k)
		}
	}
}
