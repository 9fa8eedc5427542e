package hotkey

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Fleet view. A key read 200 times a second on each of 100 instances takes
// 20,000 reads a second from one Redis node, yet never crosses a per-instance
// threshold of 1,000. With WithFleet, detectors of one group add their counts
// up in Redis and promote what is hot across the group.
//
// Time is cut into windows of the detector's length, numbered from the Unix
// epoch by the Redis server's clock (fleetclock.go), so every instance agrees
// on the number of a window and on when it starts, within a tick, however far
// its own clock is off. At the first tick of each window an instance sends
// one pipeline (one round trip): it adds the counts of its k largest
// candidates (its view of the window that just ended) to that window's sorted
// set with ZINCRBY, adds its total to the window's total, sets both to expire
// after three windows, reads back the members over the minimum count of that
// window and of the one before, with both totals, and reads the server's
// clock. The window that just ended is still filling as
// other instances report; the one before is complete. A key is hot in the
// fleet when either meets the thresholds (minimum count, minimum share of
// that window's total) with the sum of all instances' counts; its count is
// the larger of the two.
//
// The keys of one group all carry the group as a hash tag, so a pipeline
// touches one Cluster slot; groups spread over the slots. Nothing is kept per
// instance: an instance that joins simply starts adding, one that leaves stops,
// and its counts expire with their windows.
//
// The fleet's keys join the hot set at every tick until the next exchange
// replaces them: the hot set holds up to k keys hot by this instance's own
// counts, as without the fleet, and up to k more hot across the fleet.
// IsHot, Top and the change events answer for the union, so a key hot
// locally stays hot. When an exchange fails (Redis unreachable, a timeout)
// the fleet's keys are dropped, the failure is counted in Stats and handed to
// the WithErrorHandler callback, and detection is local until an exchange
// succeeds.

// ErrRedis wraps the errors of a fleet exchange.
var ErrRedis = kind.Redis("hotkey")

// fleetConfig is set by WithFleet.
type fleetConfig struct {
	rdb   redis.UniversalClient
	group string
}

// WithFleet makes detectors created with the same group (and Redis) share
// their counts: IsHot, Top and the change events then answer for the group,
// keys hot locally included. rdb may be any go-redis client, Cluster
// included. The group must not contain '{' or '}' (it is the keys' hash
// tag). It names who shares counts, not where keys live: the keys are
// "<prefix>{group}:<window>" (WithPrefix). Each detector sends one pipeline
// per window; see the package documentation.
func WithFleet(rdb redis.UniversalClient, group string) Option {
	return func(c *config) {
		switch {
		case rdb == nil:
			c.errs.Invalid("nil fleet client")
		case group == "" || strings.ContainsAny(group, "{}"):
			c.errs.Invalid("fleet group %q is empty or holds a brace", group)
		default:
			c.fleet = &fleetConfig{rdb: rdb, group: group}
		}
	}
}

// WithErrorHandler registers fn to be told of every failed fleet exchange;
// nil means no handler. It is called from the goroutine that runs Tick and
// must not call Tick or Close.
func WithErrorHandler(fn func(error)) Option {
	return func(c *config) { c.report.Handler = fn }
}

// WithPrefix sets the prefix of the fleet exchange's Redis keys (default
// "cacheguard:hotkey:"). It may not contain '{' or '}', which would change
// the hash tag; every detector of a group must use the same.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if c.errs.Prefix(prefix) {
			c.prefix = prefix
		}
	}
}

// WithLogger sets where the fleet exchange's outages are logged: once when
// exchanges start failing (the error), once when one succeeds again. The
// default, and what nil stands for, is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.report.Logger = option.Logger(l) }
}

// fleetWindows is how many windows a group's keys live after their last
// write: the window being filled, the complete one read with it, and one of
// slack for exchanges a tick (or a slow round trip) late.
const fleetWindows = 3

// fleetTimeout bounds an exchange, which runs on the ticking goroutine once
// per window: half a window, at least 100 ms, at most a second. A slow
// exchange delays that window's first tick, never Record.
func (d *Detector) fleetTimeout() time.Duration {
	return min(max(d.cfg.window/2, 100*time.Millisecond), time.Second)
}

// fleetTick runs an exchange if now is in a window the detector has not
// exchanged in yet. entries are this tick's candidates (sampled units) and
// total the window's accesses (sampled units). The caller holds tickMu.
func (d *Detector) fleetTick(now time.Time, entries []Entry, total uint64) {
	if d.cfg.fleet == nil {
		return
	}
	if !d.fleetSynced {
		// Until it knows the fleet's clock, the detector asks for it at
		// most once a window of its own clock (fleetclock.go).
		if own := now.UnixNano() / int64(d.cfg.window); own != d.fleetTry {
			d.fleetTry = own
			if err := d.syncFleetClock(); err != nil {
				d.fleetFailed(err)
			}
		}
		if !d.fleetSynced {
			return
		}
	}
	win := now.Add(d.fleetOffset).UnixNano() / int64(d.cfg.window)
	if win <= d.fleetWin {
		return
	}
	if d.fleetWin == 0 {
		// The first exchange only reads: what this detector counted so far
		// does not cover the window that just ended.
		entries, total = nil, 0
	}
	d.fleetWin = win
	view, err := d.exchange(win-1, entries, total)
	if err != nil {
		d.fleetFailed(err)
		return
	}
	d.nFleetExchanges.Add(1)
	d.fleetView = view
	d.nFleetHot.Store(int64(len(view)))
	if d.fleetFailing {
		d.fleetFailing = false
		d.cfg.report.Logger.Info("cacheguard: hotkey: fleet exchanges back", "group", d.cfg.fleet.group)
	}
}

// fleetFailed drops the fleet's keys after a failed exchange, counts the
// failure and reports it, unless the detector is closing (not a failure of
// Redis).
func (d *Detector) fleetFailed(err error) {
	if d.ctx.Err() != nil {
		return
	}
	d.nFleetExchanges.Add(1)
	d.nFleetErrors.Add(1)
	d.fleetView = d.fleetView[:0]
	d.nFleetHot.Store(0)
	if !d.fleetFailing {
		d.fleetFailing = true
		d.cfg.report.Warn("cacheguard: hotkey: fleet exchanges failing; detection is local until one succeeds", err, "group", d.cfg.fleet.group)
	} else {
		d.cfg.report.Handle(err)
	}
}

// exchange adds this instance's largest counts to window win and reads back
// the keys hot in win or the window before, largest first.
func (d *Detector) exchange(win int64, entries []Entry, total uint64) ([]Entry, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.fleetTimeout())
	defer cancel()
	s := uint64(d.cfg.sampling)
	mine := slices.Clone(entries)
	slices.SortFunc(mine, func(a, b Entry) int { return cmp.Compare(b.Count, a.Count) })
	mine = mine[:min(len(mine), d.cfg.k)]

	set, tot := wire.FleetKeys(d.cfg.prefix, d.cfg.fleet.group, win)
	prevSet, prevTot := wire.FleetKeys(d.cfg.prefix, d.cfg.fleet.group, win-1)
	ttl := fleetWindows * d.cfg.window
	minScore := strconv.FormatUint(max(d.cfg.minCount, 1), 10)
	read := func(p redis.Pipeliner, key string) *redis.ZSliceCmd {
		return p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: "+inf", Stop: minScore,
			ByScore: true, Rev: true, Count: int64(d.cfg.k)})
	}
	var sets [2]*redis.ZSliceCmd
	var tots [2]*redis.StringCmd
	var readTime func() (time.Time, error)
	before := d.cfg.now()
	_, err := pipe.Run(ctx, d.cfg.fleet.rdb.Pipeline(), func(p redis.Pipeliner) error {
		if d.serverClock() {
			readTime = d.queueTime(ctx, p, set)
		}
		for _, e := range mine {
			if e.Count > 0 {
				p.ZIncrBy(ctx, set, float64(e.Count*s), e.Key)
			}
		}
		if len(mine) > 0 || total > 0 {
			p.IncrBy(ctx, tot, int64(total*s))
			p.PExpire(ctx, set, ttl)
			p.PExpire(ctx, tot, ttl)
		}
		sets[0], sets[1] = read(p, set), read(p, prevSet)
		tots[0], tots[1] = p.Get(ctx, tot), p.Get(ctx, prevTot)
		return nil
	})
	after := d.cfg.now()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, kind.Wrap(ErrRedis, fmt.Sprintf("fleet exchange of group %q", d.cfg.fleet.group), err)
	}
	if readTime != nil {
		server, err := readTime()
		if err != nil {
			return nil, kind.Wrap(ErrRedis, fmt.Sprintf("server time of group %q", d.cfg.fleet.group), err)
		}
		d.learnOffset(server, before, after)
	}
	counts := map[string]uint64{}
	for i := range sets {
		t, _ := tots[i].Uint64() // redis.Nil: nobody reported that window
		for _, z := range sets[i].Val() {
			key, _ := z.Member.(string)
			n := uint64(z.Score)
			if d.cfg.minShare > 0 && float64(n) < d.cfg.minShare*float64(t) {
				continue
			}
			counts[key] = max(counts[key], n)
		}
	}
	view := make([]Entry, 0, len(counts))
	for k, n := range counts {
		if d.filtered && !d.cfg.rules.allows(k) {
			continue
		}
		view = append(view, Entry{Key: k, Count: n})
	}
	sortEntries(view)
	return view[:min(len(view), d.cfg.k)], nil
}

// sortEntries orders entries largest count first, then by key.
func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
}

// withFleetView adds the fleet's keys that top (this instance's hot keys,
// counts in accesses) lacks, and raises the count of those it has to the
// fleet's when larger; the result is ordered like top.
func (d *Detector) withFleetView(top []Entry) []Entry {
	if len(d.fleetView) == 0 {
		return top
	}
	at := make(map[string]int, len(top))
	for i, e := range top {
		at[e.Key] = i
	}
	for _, e := range d.fleetView {
		if i, ok := at[e.Key]; ok {
			top[i].Count = max(top[i].Count, e.Count)
			continue
		}
		top = append(top, e)
	}
	sortEntries(top)
	return top
}
