package bloom

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// Filter is what a read path consumes. MayContain answers false only when the
// key was certainly never added and the filter is ready; while the filter is
// warming up it answers true for every key, so a caller needs no separate
// readiness check before trusting a false. Add records keys that now exist.
type Filter interface {
	// MayContain reports whether key may have been added. False is definite.
	MayContain(ctx context.Context, key string) (bool, error)
	// Add records keys. It must be called for every inserted row.
	Add(ctx context.Context, keys ...string) error
	// Ready reports whether the filter holds every existing key, as far as
	// this instance knows; it is meant for health checks and metrics.
	Ready() bool
}

var (
	_ Filter = (*Local)(nil)
	_ Filter = (*Redis)(nil)
	_ Filter = (*Fleet)(nil)
)

// MaxBits is the largest filter, in bits: the largest SETBIT offset plus one,
// which is also Redis' 512 MiB string limit. Local filters share the limit so
// that any filter can move between the two implementations.
const MaxBits = 1 << 32

// maxK bounds the number of hash functions; k = 64 already means a
// false-positive rate near 1e-19, and k offsets travel with every Redis test.
const maxK = 64

// schemeVersion names the way a key maps to bits: bits-and-blooms/bloom/v3
// Locations (murmur3, 128-bit, enhanced double hashing) reduced mod m, bit i
// being SETBIT offset i. It is stored with every Redis filter and in every
// snapshot; change it if the mapping ever changes, so that old bitmaps are
// refused instead of misread.
const schemeVersion = 1

var (
	// ErrInvalidOption is returned for an option that makes no sense.
	ErrInvalidOption = kind.InvalidOption("bloom")
	// ErrInvalidArgument is returned for an expected key count of zero, a
	// false-positive rate outside (0, 1), a bad filter name or a nil
	// client.
	ErrInvalidArgument = kind.InvalidArgument("bloom")
	// ErrRedis is wrapped by the error of a Redis call that failed (the end
	// of the caller's own context comes back as it is).
	ErrRedis = kind.Redis("bloom")
	// ErrTooLarge is returned when the requested size exceeds MaxBits.
	ErrTooLarge = errors.New("cacheguard: bloom: filter larger than 2^32 bits (512 MiB)")
	// ErrMismatch is returned when a Redis filter of the same name exists
	// with another size, number of hash functions or location scheme.
	ErrMismatch = errors.New("cacheguard: bloom: filter exists with other parameters")
	// ErrRebuildInProgress is returned by Rebuild while another rebuild of
	// the same filter is running.
	ErrRebuildInProgress = errors.New("cacheguard: bloom: rebuild already in progress")
	// ErrRebuildLost is returned by a Redis Rebuild whose lease expired or
	// was taken over before it could swap its filter in; the serving filter
	// is left as it was.
	ErrRebuildLost = errors.New("cacheguard: bloom: rebuild lease lost")
	// ErrCorrupt is returned when a snapshot cannot be read back.
	ErrCorrupt = errors.New("cacheguard: bloom: corrupt snapshot")
)

// Params are a filter's size in bits (M) and its number of hash functions (K).
type Params struct {
	M uint64
	K uint
}

// String formats p for error messages.
func (p Params) String() string {
	return fmt.Sprintf("m=%d k=%d", p.M, p.K)
}

// Estimate returns the smallest filter that holds n keys at false-positive
// rate fp (the classic m = -n ln fp / ln² 2, k = ln 2 · m/n, rounded up).
func Estimate(n uint, fp float64) (Params, error) {
	if n == 0 {
		return Params{}, fmt.Errorf("%w: expected key count must be positive", ErrInvalidArgument)
	}
	if !(fp > 0 && fp < 1) {
		return Params{}, fmt.Errorf("%w: false-positive rate %v must be in (0, 1)", ErrInvalidArgument, fp)
	}
	// Compute in float first: on huge n the library's uint conversion would
	// wrap instead of failing.
	bits := math.Ceil(-float64(n) * math.Log(fp) / (math.Ln2 * math.Ln2))
	if bits > MaxBits {
		return Params{}, fmt.Errorf("%w: %d keys at rate %v need %.0f bits", ErrTooLarge, n, fp, bits)
	}
	m, k := bbloom.EstimateParameters(n, fp)
	p := Params{M: uint64(m), K: k}
	return p, p.validate()
}

func (p Params) validate() error {
	switch {
	case p.M == 0 || p.K == 0:
		return fmt.Errorf("%w: %v", ErrInvalidArgument, p)
	case p.M > MaxBits:
		return fmt.Errorf("%w: %v", ErrTooLarge, p)
	case p.K > maxK:
		return fmt.Errorf("%w: %v needs more than %d hash functions", ErrInvalidArgument, p, maxK)
	}
	return nil
}

// pack appends key's k bit offsets to dst, each a big-endian uint32 (m is
// at most 2^32, so every offset fits). It is the one place the location
// scheme lives for the Redis filter; Local uses the library's Test and Add,
// which compute the same locations. Packing the offsets into one script
// argument, instead of one argument each, makes a batched call several times
// cheaper on both ends.
func (p Params) pack(dst []byte, key string) []byte {
	for _, l := range bbloom.Locations([]byte(key), p.K) {
		dst = binary.BigEndian.AppendUint32(dst, uint32(l%p.M))
	}
	return dst
}
