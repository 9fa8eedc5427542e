package cache

import (
	"errors"
	"math"
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
		"tiny lease":            {WithLease(time.Millisecond)},
		"negative wait":         {WithWait(-1)},
		"nil codec":             {WithCodec(nil)},
		"nil filter":            {WithBloom(nil)},
		"negative refresh beta": {WithEarlyRefresh(-1)},
		"zero load timeout":     {WithLoadTimeout(0)},
	}
	for name, opts := range bad {
		if _, err := New[string](rdb, opts...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := New[string](nil); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("nil client: %v", err)
	}
	c, err := New[string](rdb, WithTTL(time.Minute), WithJitter(0), WithNullTTL(time.Minute), WithWait(0), nil)
	if err != nil {
		t.Fatalf("sane options rejected: %v", err)
	}
	c.Close()
}
