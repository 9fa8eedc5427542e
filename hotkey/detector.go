package hotkey

import (
	"context"
	"hash/maphash"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/option"
)

// Entry is a key and its number of accesses within the window.
type Entry struct {
	Key   string
	Count uint64
}

// Event reports that a key became hot (Hot true) or stopped being hot.
type Event struct {
	Key   string
	Hot   bool
	Count uint64    // accesses within the window at the tick that decided
	At    time.Time // the detector's clock at that tick
}

// Detector tracks the hottest keys over a sliding window. It is safe for
// concurrent use. Create it with New; a nil *Detector records nothing and
// reports nothing hot.
type Detector struct {
	cfg        config
	seed       maphash.Seed
	shards     []shard
	shardShift uint // 64 - log2(len(shards)); a hash's top bits pick its shard
	filtered   bool // rules are set

	hot atomic.Pointer[snapshot]

	tickMu   sync.Mutex // serialises Tick
	start    time.Time
	lastTick int64   // ticks since start at the last Tick
	scratch  []Entry // reused by Tick: all candidates
	ranked   []Entry // reused by Tick: candidates over the thresholds
	demoted  []Entry // reused by Tick: keys that left the hot set
	ticked   bool    // a Tick has run: the window's total is known
	rebase   bool    // paused while empty: the next Tick or resume slides nothing

	// earlyThr is the count (sampled units) at which Record promotes a
	// candidate between ticks (early.go).
	earlyThr  atomic.Uint64
	idle      atomic.Bool          // the ticking goroutine is paused (idle.go); Record reads it
	earlySetN atomic.Int64         // shards' early and early-old sets that are not nil
	earlySets []*earlySet          // reused by Tick: the sets it took
	earlyAt   map[string]time.Time // reused by Tick: their keys' promotion times

	nPromoted, nDemoted atomic.Uint64 // see Stats (stats.go)

	// The fleet view (fleet.go), written under tickMu.
	fleetWin                      int64         // window of the last exchange, by the fleet's clock
	fleetOffset                   time.Duration // the fleet's clock minus the detector's (fleetclock.go)
	fleetSynced                   bool          // fleetOffset is known
	fleetFailing                  bool          // the last exchange failed (logged once per outage)
	fleetTry                      int64         // window of the detector's clock of the last try to learn it
	fleetView                     []Entry       // keys hot across the fleet, largest first
	nFleetExchanges, nFleetErrors atomic.Uint64
	nFleetHot                     atomic.Int64
	ctx                           context.Context // ends at Close: bounds exchanges
	cancel                        context.CancelFunc

	stop      chan struct{}
	done      chan struct{}
	wake      chan struct{} // Record wakes a paused ticking goroutine (idle.go)
	closeOnce sync.Once
}

// snapshot is an immutable hot set, replaced whole at every tick.
type snapshot struct {
	byKey map[string]struct{}
	top   []Entry // hot keys, largest count first
	local int     // of top, the keys hot by this instance's counts
	// early counts the keys promoted between ticks while this snapshot
	// was current, against the room it leaves under k.
	early atomic.Int64
}

// New returns a Detector configured by opts. Unless WithClock is given it
// starts a goroutine that ticks; Close stops it.
func New(opts ...Option) (*Detector, error) {
	cfg := defaultConfig()
	option.Apply(&cfg, opts)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nShards := cfg.shards
	if nShards <= 0 {
		// A few shards per core keep two Records rarely on the same mutex.
		nShards = 1 << bits.Len(uint(4*runtime.GOMAXPROCS(0)-1))
		nShards = min(nShards, 64)
	}
	// One slot per whole tick of the window, plus the tick in progress: right
	// after a tick the sums cover exactly one window.
	slots := int(cfg.window/cfg.tick) + 1
	// A shard tracks its share of the k hottest keys with a wide margin: the
	// count of top keys in one shard is binomial, and 2k/shards + 64 is many
	// deviations above its mean for any k. The sketch's rows are split over
	// the shards like the keys, wide enough that a new heavy key rarely finds
	// all of its buckets held by a heavier key that is cooling down.
	capacity := min(cfg.k+16, 2*cfg.k/nShards+64)
	width := max(128, max(8192, 16*cfg.k)/nShards)
	d := &Detector{
		cfg:        cfg,
		seed:       maphash.MakeSeed(),
		shards:     make([]shard, nShards),
		shardShift: uint(64 - bits.TrailingZeros(uint(nShards))),
		filtered:   !cfg.rules.empty(),
		start:      cfg.now(),
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for i := range d.shards {
		d.shards[i].init(slots, capacity, width, rand.Uint64())
		d.shards[i].det = d
	}
	d.hot.Store(&snapshot{})
	d.earlyThr.Store(d.earlyThreshold(0))
	if !cfg.manualClk || cfg.tickSrc != nil {
		d.stop = make(chan struct{})
		d.done = make(chan struct{})
		d.wake = make(chan struct{}, 1)
		go d.loop()
	}
	return d, nil
}

// loop ticks until Close. Once the detector holds nothing (no access within
// a whole window, nothing hot, nothing left to decay) it stops its ticker
// until the next Record, so an idle detector costs no CPU (idle.go).
func (d *Detector) loop() {
	defer close(d.done)
	ticks := d.cfg.tickSrc
	var t *time.Ticker
	if ticks == nil {
		t = time.NewTicker(d.cfg.tick)
		defer t.Stop()
		ticks = t.C
	}
	aligning := false // the ticker runs a shortened first period
	for {
		select {
		case <-d.stop:
			return
		case <-ticks:
			if aligning {
				t.Reset(d.cfg.tick)
				aligning = false
			}
			d.Tick()
			d.step("ticked")
			if !d.pause() {
				continue
			}
			if t != nil {
				t.Stop()
			}
			d.step("paused")
			select {
			case <-d.stop:
				return
			case <-d.wake:
			}
			until := d.resume()
			if t != nil {
				t.Reset(until)
				aligning = true
			}
			d.step("resumed")
		}
	}
}

// Close stops the ticking goroutine, if any, and waits for it. The detector
// keeps answering with the last hot set. Close is idempotent and returns nil.
func (d *Detector) Close() error {
	if d == nil {
		return nil
	}
	if d.stop == nil {
		d.cancel()
		return nil
	}
	d.closeOnce.Do(func() {
		d.cancel()
		close(d.stop)
		<-d.done
	})
	return nil
}

// Record counts one access to key. It takes one shard's mutex, which a tick
// holds for tens of microseconds at most, and allocates only when key starts
// being tracked (a copy of the key), so not at all for keys already tracked.
func (d *Detector) Record(key string) {
	if d == nil {
		return
	}
	if d.cfg.sampling > 1 && rand.Uint32N(d.cfg.sampling) != 0 {
		return
	}
	h := maphash.String(d.seed, key)
	track := !d.filtered || d.cfg.rules.allows(key)
	d.shards[d.shardOfHash(h)].record(key, h, track, d.earlyThr.Load())
	if d.idle.Load() {
		d.wakeUp()
	}
}

func (d *Detector) shardOfHash(h uint64) uint64 {
	return h >> d.shardShift & uint64(len(d.shards)-1)
}

func (d *Detector) shardOf(key string) uint64 {
	return d.shardOfHash(maphash.String(d.seed, key))
}

// IsHot reports whether key is hot: hot at the last tick, or promoted since
// by crossing the threshold.
func (d *Detector) IsHot(key string) bool {
	if d == nil {
		return false
	}
	snap := d.hot.Load()
	if _, ok := snap.byKey[key]; ok {
		return true
	}
	return d.earlyHot(key, snap)
}

// Top returns at most n of the hot keys with their counts, largest first, as
// of the last tick (keys promoted since are not in it). n <= 0 returns them
// all. With WithFleet the keys hot across the fleet are among them, with the
// fleet's count.
func (d *Detector) Top(n int) []Entry {
	if d == nil {
		return nil
	}
	top := d.hot.Load().top
	if n <= 0 || n > len(top) {
		n = len(top)
	}
	return slices.Clone(top[:n])
}

// Tick brings the detector up to its clock: it slides the window by the ticks
// that have passed since the last call (none is fine), recomputes the hot set
// and reports the changes to the WithOnChange callback. The detector's own
// goroutine calls it every tick; with WithClock the caller does.
func (d *Detector) Tick() {
	if d == nil {
		return
	}
	d.tickMu.Lock()
	defer d.tickMu.Unlock()
	now := d.cfg.now()
	d.rebaseTo(now)
	steps := int64(0)
	if cur := int64(now.Sub(d.start) / d.cfg.tick); cur > d.lastTick {
		steps, d.lastTick = cur-d.lastTick, cur
	}
	slots := int64(len(d.shards[0].total))
	// The sketch keeps 1-1/n of its counts per tick, n ticks to a window: an
	// access then weighs about one window in all, as it does in the ring.
	n := float64(d.cfg.window / d.cfg.tick)
	num := uint64(math.Pow(1-1/n, float64(steps)) * (1 << 16))

	entries, total := d.scratch[:0], uint64(0)
	sets := d.earlySets[:0]
	for i := range d.shards {
		var t uint64
		var set *earlySet
		entries, t, set = d.shards[i].advance(int(min(steps, slots)), num, entries)
		total += t
		sets = append(sets, set)
	}
	d.step("taken")
	// Most candidates are under the thresholds: rank only the others.
	ranked := d.ranked[:0]
	for _, e := range entries {
		if d.hotEnough(e.Count, total) {
			ranked = append(ranked, e)
		}
	}
	sortEntries(ranked)
	keep := min(len(ranked), d.cfg.k)
	clear(ranked[keep:])
	ranked = ranked[:keep]
	for i := range ranked {
		ranked[i].Count *= uint64(d.cfg.sampling)
	}
	local := len(ranked)
	d.fleetTick(now, entries, total)
	ranked = d.withFleetView(ranked)
	next := &snapshot{byKey: make(map[string]struct{}, len(ranked)), local: local}
	for _, e := range ranked {
		next.top = append(next.top, e)
		next.byKey[e.Key] = struct{}{}
	}
	clear(ranked)
	d.ranked = ranked[:0]
	prev := d.hot.Swap(next)
	d.step("published")
	// The early keys taken above are now in the snapshot or demoted.
	for i := range d.shards {
		if d.shards[i].earlyOld.Swap(nil) != nil {
			d.earlySetN.Add(-1)
		}
	}
	d.step("cleared")
	{ // counted for Stats, and reported to WithOnChange if set
		if d.earlyAt == nil {
			d.earlyAt = map[string]time.Time{}
		}
		earlyTimes(sets, d.earlyAt)
		d.notify(prev, next, entries, d.earlyAt, now)
		clear(d.earlyAt)
	}
	// From now on, promotions between ticks use this window's total.
	d.ticked = true
	d.earlyThr.Store(d.earlyThreshold(total))
	clear(sets)
	d.earlySets = sets[:0]
	clear(entries) // drop the key strings until the next tick
	d.scratch = entries[:0]
}

func (d *Detector) step(name string) {
	if d.cfg.tickStep != nil {
		d.cfg.tickStep(name)
	}
}

// hotEnough applies the thresholds to a candidate's count (in sampled units)
// against the window's total.
func (d *Detector) hotEnough(count, total uint64) bool {
	if count == 0 || count*uint64(d.cfg.sampling) < d.cfg.minCount {
		return false
	}
	return d.cfg.minShare == 0 || float64(count) >= d.cfg.minShare*float64(total)
}
