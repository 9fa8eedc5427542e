package engine

import (
	"math"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// XFetch's gap (load time × beta × -ln u) can exceed what a time.Duration
// holds (292 years) with a large beta: converted to a Duration it wrapped to
// a large negative gap and the refresh never fired, the more surely the
// slower the load (the otel trace test failed so under -race, where its load
// took tens of milliseconds).
func TestEarlyRefreshWithAHugeGap(t *testing.T) {
	for _, beta := range []float64{1e12, math.Inf(1)} {
		c := &Engine[string]{cfg: Config{EarlyBeta: beta}, Parts: Parts[string]{Hooks: &hook.Set{Rand: func() float64 { return 0.5 }},
			Format: entry.New(entry.Config[string]{}, &telemetry.Recorder{}, nil)}}
		env := wire.Envelope{Delta: 50 * time.Millisecond, Expiry: time.Now().Add(10 * time.Minute)}
		if !c.shouldRefresh(env) {
			t.Errorf("beta %v, load 50ms, 10 minutes left: no refresh", beta)
		}
	}
}
