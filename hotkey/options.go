package hotkey

import (
	"math"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// ErrInvalidOption is returned by New, wrapped with the reason, when an option
// is out of range.
var ErrInvalidOption = kind.InvalidOption("hotkey")

// Option configures a Detector. A nil Option is ignored.
type Option func(*config)

// config holds the settings New validates. Bad values are recorded in err by
// the option that saw them, so New can report the first one.
type config struct {
	k         int
	window    time.Duration
	tick      time.Duration
	minCount  uint64
	minShare  float64
	sampling  uint32
	now       func() time.Time
	onChange  func(Event)
	rules     rules
	shards    int               // 0: derived from GOMAXPROCS
	errs      option.Errors     // the first invalid option
	tickSrc   <-chan time.Time  // test hook: replaces the time.Ticker
	tickStep  func(step string) // test hook: called between the steps of a tick
	serverNow func() time.Time  // test hook: the fleet's server clock, in place of TIME
	manualClk bool              // WithClock was given
	fleet     *fleetConfig      // WithFleet (fleet.go)
	report    option.Reporter   // WithLogger, WithErrorHandler
	prefix    string            // WithPrefix (fleet.go)
}

const (
	defaultK        = 100
	defaultWindow   = time.Second
	defaultTick     = 100 * time.Millisecond
	defaultMinCount = 100
	maxSlots        = 1024
	maxK            = 16384
)

func defaultConfig() config {
	return config{
		k:        defaultK,
		window:   defaultWindow,
		tick:     defaultTick,
		minCount: defaultMinCount,
		sampling: 1,
		now:      time.Now,
		errs:     option.For(ErrInvalidOption),
		report:   option.NewReporter(nil, nil),
		prefix:   wire.HotKeyPrefix,
	}
}

func (c *config) validate() error {
	if c.errs.Err() == nil && c.window%c.tick != 0 {
		c.errs.Invalid("window %v is not a multiple of tick %v", c.window, c.tick)
	}
	if n := c.window / c.tick; c.errs.Err() == nil && n > maxSlots {
		c.errs.Invalid("window %v holds %d ticks of %v, more than %d", c.window, n, c.tick, maxSlots)
	}
	return c.errs.Err()
}

// WithK sets how many keys at most can be hot at once (default 100). It must
// be between 1 and 16384.
func WithK(k int) Option {
	return func(c *config) {
		if k < 1 || k > maxK {
			c.errs.Invalid("k %d out of [1, %d]", k, maxK)
			return
		}
		c.k = k
	}
}

// WithWindow sets the sliding window over which accesses are counted (default
// 1s). It must be a positive multiple of the tick, at most 1024 ticks.
func WithWindow(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("window %v is not positive", d)
			return
		}
		c.window = d
	}
}

// WithTick sets how often the window slides and the hot set is recomputed
// (default 100ms). A key is promoted by the access that crosses the threshold;
// ticks slide the window, demote keys and rank the hot set against k.
func WithTick(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs.Invalid("tick %v is not positive", d)
			return
		}
		c.tick = d
	}
}

// WithMinCount sets the number of accesses within one window a key needs to
// be hot (default 100). Zero disables the count threshold.
func WithMinCount(n uint64) Option {
	return func(c *config) { c.minCount = n }
}

// WithMinShare sets the share of all accesses within one window a key needs to
// be hot, in [0, 1] (default 0, disabled). It applies together with the
// minimum count: a hot key meets both.
func WithMinShare(f float64) Option {
	return func(c *config) {
		if math.IsNaN(f) || f < 0 || f > 1 {
			c.errs.Invalid("min share %v out of [0, 1]", f)
			return
		}
		c.minShare = f
	}
}

// WithSampling makes Record count one access in every n, chosen at random,
// and weigh it n (default 1: every access). Counts reported by Top and
// compared with the minimum count are scaled back up. Sampling trades accuracy
// on lukewarm keys for a cheaper Record; hot keys are hardly affected.
func WithSampling(n int) Option {
	return func(c *config) {
		if n < 1 || uint64(n) > math.MaxUint32 {
			c.errs.Invalid("sampling 1 in %d out of range", n)
			return
		}
		c.sampling = uint32(n)
	}
}

// WithClock replaces time.Now as the detector's clock, and hands the ticking to
// the caller: New starts no goroutine, and the caller calls Tick after moving
// the clock. Tick retires as many ticks as the clock says have passed. With
// WithFleet the given clock also numbers the fleet's windows in place of the
// Redis server's, so the detectors of one group must be given clocks that
// agree.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errs.Invalid("nil clock")
			return
		}
		c.now = now
		c.manualClk = true
	}
}

// WithOnChange registers fn to be told of every promotion and demotion. fn is
// called from the goroutine that runs Tick, one event at a time, in order,
// never from Record. A slow fn delays the next tick, not Record. fn must not
// call Tick or Close.
func WithOnChange(fn func(Event)) Option {
	return func(c *config) {
		if fn == nil {
			c.errs.Invalid("nil change callback")
			return
		}
		c.onChange = fn
	}
}

// WithAllowPrefix restricts detection to keys with one of the given prefixes.
// Other keys still count toward the total traffic used by WithMinShare, but
// are never tracked or reported. May be given more than once; the prefixes
// add up.
func WithAllowPrefix(prefixes ...string) Option {
	return func(c *config) {
		for _, p := range prefixes {
			if p == "" {
				c.errs.Invalid("empty allow prefix")
				return
			}
		}
		c.rules.allow = append(c.rules.allow, prefixes...)
	}
}

// WithDenyPrefix excludes keys with one of the given prefixes from detection,
// whatever the allow rules say. Denied keys still count toward the total
// traffic. May be given more than once; the prefixes add up.
func WithDenyPrefix(prefixes ...string) Option {
	return func(c *config) {
		for _, p := range prefixes {
			if p == "" {
				c.errs.Invalid("empty deny prefix")
				return
			}
		}
		c.rules.deny = append(c.rules.deny, prefixes...)
	}
}

// WithFilter excludes keys for which keep returns false, in addition to the
// prefix rules. keep is called on every Record of a key the prefix rules
// allow, concurrently, so it must be cheap and safe for concurrent use. May be
// given more than once; a key must pass them all.
func WithFilter(keep func(key string) bool) Option {
	return func(c *config) {
		if keep == nil {
			c.errs.Invalid("nil filter")
			return
		}
		c.rules.filters = append(c.rules.filters, keep)
	}
}

// withShards fixes the shard count (a power of two); tests use it to make
// results independent of GOMAXPROCS.
func withShards(n int) Option {
	return func(c *config) { c.shards = n }
}

// withTicks makes the background goroutine tick on ch instead of a
// time.Ticker, so tests can drive it.
func withTicks(ch <-chan time.Time) Option {
	return func(c *config) { c.tickSrc = ch }
}

// withTickSteps makes Tick call fn between its steps ("taken": the shards'
// early sets are taken; "published": the new snapshot is out; "cleared": the
// taken sets are gone), so tests can look at the detector in between. The
// ticking goroutine also calls it with "ticked" after each Tick, "pausing"
// when it has raised the idle flag and is about to look again, "paused" when
// it stops ticking for lack of traffic and "resumed" when a Record has woken
// it (idle.go).
func withTickSteps(fn func(step string)) Option {
	return func(c *config) { c.tickStep = fn }
}

// withServerClock makes the fleet read the Redis server's clock from now
// instead of TIME, with or without WithClock, so tests can give detectors
// skewed clocks around a server clock that moves with theirs.
func withServerClock(now func() time.Time) Option {
	return func(c *config) { c.serverNow = now }
}
