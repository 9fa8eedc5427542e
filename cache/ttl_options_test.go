package cache

import (
	"errors"
	"testing"
	"time"
)

// A TTL shorter than the default null TTL is accepted: the null TTL follows.
func TestShortTTLAccepted(t *testing.T) {
	_, rdb := newSingle(t)
	c, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.cfg.nullTTL != 30*time.Second {
		t.Fatalf("null TTL %v", c.cfg.nullTTL)
	}
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithTTL(30*time.Second), WithNullTTL(time.Minute)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("explicit null TTL over TTL: %v", err)
	}
}
