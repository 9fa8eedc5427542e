package redistest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// CheckBounded runs call with a context that ends after budget and fails
// the test (without stopping it) unless call returns within budget+margin
// with an error matching every one of want.
func CheckBounded(t testing.TB, what string, budget, margin time.Duration, call func(ctx context.Context) error, want ...error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	if el := time.Since(start); el > budget+margin {
		t.Errorf("%s took %v, budget %v", what, el, budget)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s: err = %v, want it to match %v", what, err, w)
		}
	}
}
