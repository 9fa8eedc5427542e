package cache

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestNewRejectsNonsense(t *testing.T) {
	_, rdb := newSingle(t)
	bad := map[string][]Option{
		"negative TTL":          {WithTTL(-time.Second)},
		"zero TTL":              {WithTTL(0)},
		"jitter 1":              {WithJitter(1)},
		"negative jitter":       {WithJitter(-0.1)},
		"NaN jitter":            {WithJitter(math.NaN())},
		"null TTL over TTL":     {WithTTL(time.Minute), WithNullTTL(time.Hour)},
		"zero null TTL":         {WithNullTTL(0)},
		"tiny lease":            {WithFillLease(time.Millisecond)},
		"negative wait":         {WithWait(-1)},
		"nil codec":             {WithCodec(nil)},
		"nil filter":            {WithBloom(nil)},
		"negative refresh beta": {WithEarlyRefresh(-1)},
		"zero load timeout":     {WithLoadTimeout(0)},
	}
	for name, opts := range bad {
		if _, err := New(rdb, Values[string]{}, append([]Option{WithPrefix("nonsense:")}, opts...)...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := New(nil, Values[string]{}); !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidOption) {
		t.Errorf("nil client: %v", err)
	}
	c, err := New(rdb, Values[string]{}, WithPrefix("sane:"), WithTTL(time.Minute), WithJitter(0), WithNullTTL(time.Minute), WithWait(0), nil)
	if err != nil {
		t.Fatalf("sane options rejected: %v", err)
	}
	c.Close()
}

// A Cache names its keys: without WithPrefix, two caches of different types
// on one Redis would share keys and overwrite each other's entries, so New
// refuses to guess. An explicit empty prefix is the caller's choice (a Redis
// database of the cache's own) and kept.
func TestNewRequiresPrefix(t *testing.T) {
	rdb := sharedSingleFor(t)
	_, err := New(rdb, Values[string]{}, WithTTL(time.Minute))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "WithPrefix") {
		t.Fatalf("New without a prefix: %v, want ErrInvalidOption naming WithPrefix", err)
	}
	c, err := New(rdb, Values[string]{}, WithPrefix(""))
	if err != nil {
		t.Fatalf("explicit empty prefix refused: %v", err)
	}
	c.Close()
}

// The default wait budget outlasts the lease, whatever the lease: a waiter
// then takes over a dead holder's lease instead of timing out first, and a
// slow fill that keeps extending its lease is waited for a full lease period.
func TestDefaultWaitOutlastsLease(t *testing.T) {
	rdb := sharedSingleFor(t)
	for _, opts := range [][]Option{nil, {WithFillLease(10 * time.Second)}, {WithFillLease(50 * time.Millisecond)}} {
		c, err := New(rdb, Values[string]{}, append(opts, WithPrefix(prefixFor(t)))...)
		if err != nil {
			t.Fatal(err)
		}
		if c.cfg.wait < c.cfg.lease {
			t.Errorf("default wait %v shorter than the lease %v", c.cfg.wait, c.cfg.lease)
		}
		c.Close()
	}
	// An explicit short wait (fail fast) is the caller's choice and kept.
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithWait(100*time.Millisecond))
	if err != nil || c.cfg.wait != 100*time.Millisecond {
		t.Fatalf("explicit wait: %v, %v", err, c.cfg.wait)
	}
	c.Close()
}
