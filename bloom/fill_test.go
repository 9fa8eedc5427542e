package bloom

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// Both filters report the same saturation for the same keys, and it follows
// the expected 1 - e^(-kn/m).
func TestFillRatio(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	local, err := NewLocal(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := NewRedis(ctx, rdb, "fill-"+t.Name(), 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []interface {
		FillRatio(context.Context) (float64, error)
	}{local, shared} {
		if r, err := f.FillRatio(ctx); err != nil || r != 0 {
			t.Fatalf("empty filter: FillRatio = %v, %v", r, err)
		}
	}
	keys := make([]string, 500)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	if err := local.Add(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	if err := shared.Add(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	lr, _ := local.FillRatio(ctx)
	sr, err := shared.FillRatio(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := local.Params()
	want := 1 - math.Exp(-float64(p.K)*500/float64(p.M))
	if math.Abs(lr-want) > 0.05 || math.Abs(sr-want) > 0.05 {
		t.Errorf("FillRatio local %.3f, redis %.3f; want about %.3f", lr, sr, want)
	}
}
