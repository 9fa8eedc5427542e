package bloom

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestEstimate(t *testing.T) {
	p, err := Estimate(1_000_000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	// m = ceil(-n ln p / ln² 2), k = ceil(ln 2 · m/n).
	if p.M != 9585059 || p.K != 7 {
		t.Fatalf("Estimate(1e6, 0.01) = %v, want m=9585059 k=7", p)
	}
}

func TestEstimateRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		n    uint
		fp   float64
		want error
	}{
		{0, 0.01, ErrInvalidArgument},
		{10, 0, ErrInvalidArgument},
		{10, 1, ErrInvalidArgument},
		{10, -0.5, ErrInvalidArgument},
		{10, math.NaN(), ErrInvalidArgument},
		{10, 1e-30, ErrInvalidArgument}, // needs k > 64
		{1 << 40, 0.01, ErrTooLarge},
		{500_000_000, 0.001, ErrTooLarge}, // 7.2e9 bits
	} {
		if _, err := Estimate(tc.n, tc.fp); !errors.Is(err, tc.want) {
			t.Errorf("Estimate(%d, %v) = %v, want %v", tc.n, tc.fp, err, tc.want)
		}
	}
	// Just under the limit is accepted: 2^32 bits hold about 448M keys at 1%.
	p, err := Estimate(440_000_000, 0.01)
	if err != nil || p.M > MaxBits {
		t.Fatalf("Estimate(440M, 0.01) = %v, %v; want a filter within MaxBits", p, err)
	}
}

// An option that makes no sense is refused with ErrInvalidOption, by every
// constructor, instead of being replaced by the default; a nil Option is
// ignored.
func TestBadOptionsRefused(t *testing.T) {
	var snap bytes.Buffer
	if _, err := mustLocal(t, 10, 0.01).WriteTo(&snap); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Option{
		"batch size": WithBatchSize(0),
		"progress":   WithProgress(0, func(Progress) {}),
		"lease":      WithBuildLease(0),
	} {
		if _, err := NewLocal(10, 0.01, o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("NewLocal(%s): %v, want ErrInvalidOption", name, err)
		}
		if _, err := ReadLocal(bytes.NewReader(snap.Bytes()), o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("ReadLocal(%s): %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := NewLocal(10, 0.01, nil); err != nil {
		t.Errorf("NewLocal(nil option): %v", err)
	}
}
