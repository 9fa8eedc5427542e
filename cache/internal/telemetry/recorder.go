package telemetry

import (
	"context"
	"sync/atomic"
	"time"
)

// Recorder is one cache's telemetry: its counters, its reports and, when
// the cache has an Observer, the marks of each observed call. The zero
// value counts and drops reports; New gives it a log and a handler.
type Recorder struct {
	Counters
	logs    *Logs
	onError func(key string, err error) // the error handler, if any
	// observed: an Observer is installed, so calls may carry an
	// Observation (unobserved caches pay one bool check per mark).
	observed bool
	sizes    func(op string, n int) // nil: nobody wants entry sizes
}

// New returns the recorder of a cache: reports go to logs and to onError
// (nil: none); observed says the cache has an Observer, and sizes (nil:
// none) hears every entry size read or written.
func New(logs *Logs, onError func(key string, err error), observed bool, sizes func(op string, n int)) *Recorder {
	return &Recorder{logs: logs, onError: onError, observed: observed, sizes: sizes}
}

// Report hands an error that no caller will see to the log, aggregated by
// kind, and to the error handler, which sees every one (key names the key
// it is about, "" if none).
func (r *Recorder) Report(kind Kind, key string, err error) {
	if r.logs != nil {
		r.logs.Report(kind, key, err)
	}
	if r.onError != nil {
		r.onError(key, err)
	}
}

// Flush writes the counts of repeated reports not logged yet (Close).
func (r *Recorder) Flush() {
	if r.logs != nil {
		r.logs.Flush()
	}
}

// Tier says which part of the read path answered (package cache exports
// it as cache.Tier, with the same values).
type Tier uint8

const (
	TierNone Tier = iota
	TierLocal
	TierRedis
	TierFill
	TierLoader
)

// Observation is what one observed call learns on its way; the read path
// marks it through the call's context.
type Observation struct {
	tier   atomic.Uint32
	shared atomic.Bool
	early  atomic.Bool
	soft   atomic.Bool // answered stale past the soft load timeout
	hard   atomic.Bool // a load stopped by the load timeout
	// waitStart and waitEnd are the monotonic times (since the call
	// began) of the first refused lease and of the last attempt after it.
	waitStart, waitEnd atomic.Int64
	began              time.Time
}

// Marks is what an Observation learnt, read once the call returned.
type Marks struct {
	Tier                 Tier
	Shared, Early        bool
	SoftTimeout, Timeout bool
	LeaseWaited          bool
	LeaseWait            time.Duration
}

type observationKey struct{}

// Observe returns ctx carrying a new Observation of a call that begins now.
func Observe(ctx context.Context) (context.Context, *Observation) {
	o := &Observation{began: time.Now()}
	return context.WithValue(ctx, observationKey{}, o), o
}

// Unobserved returns ctx without the Observation it carries: for work a
// call starts that is no part of it (a background refresh).
func Unobserved(ctx context.Context) context.Context {
	return context.WithValue(ctx, observationKey{}, (*Observation)(nil))
}

// Of returns the Observation ctx carries, or nil.
func Of(ctx context.Context) *Observation {
	o, _ := ctx.Value(observationKey{}).(*Observation)
	return o
}

// Marks returns what o learnt.
func (o *Observation) Marks() Marks {
	m := Marks{Tier: Tier(o.tier.Load()), Shared: o.shared.Load(), Early: o.early.Load(),
		SoftTimeout: o.soft.Load(), Timeout: o.hard.Load()}
	if start := o.waitStart.Load(); start != 0 {
		m.LeaseWaited = true
		m.LeaseWait = time.Duration(max(o.waitEnd.Load()-start, 0))
	}
	return m
}

// Raise records that the call reached t, keeping the deepest tier.
func (o *Observation) Raise(t Tier) {
	for {
		cur := o.tier.Load()
		if Tier(cur) >= t || o.tier.CompareAndSwap(cur, uint32(t)) {
			return
		}
	}
}

// Unshare clears the coalesced mark (GetMany does not coalesce).
func (o *Observation) Unshare() { o.shared.Store(false) }

// since is the time elapsed since the call began, never 0.
func (o *Observation) since() int64 { return max(int64(time.Since(o.began)), 1) }

// of returns the observation of the call whose context is ctx, or nil
// when the cache or the call is not observed.
func (r *Recorder) of(ctx context.Context) *Observation {
	if !r.observed {
		return nil
	}
	return Of(ctx)
}

// Reached marks the tier reached by the call whose context is ctx.
func (r *Recorder) Reached(ctx context.Context, t Tier) {
	if o := r.of(ctx); o != nil {
		o.Raise(t)
	}
}

// Shared marks the call as coalesced.
func (r *Recorder) Shared(ctx context.Context) {
	if o := r.of(ctx); o != nil {
		o.shared.Store(true)
	}
}

// Waits marks that the call's fill found another holder's lease and is
// about to wait: the first mark starts the wait.
func (r *Recorder) Waits(ctx context.Context) {
	if o := r.of(ctx); o != nil {
		o.waitStart.CompareAndSwap(0, o.since())
	}
}

// Attempt marks a lease attempt: once a wait has started, the last attempt
// is when it ended.
func (r *Recorder) Attempt(ctx context.Context) {
	if o := r.of(ctx); o != nil && o.waitStart.Load() != 0 {
		o.waitEnd.Store(o.since())
	}
}

// Refreshed marks that the call started an early refresh.
func (r *Recorder) Refreshed(ctx context.Context) {
	if o := r.of(ctx); o != nil {
		o.early.Store(true)
	}
}

// TimedOut marks that the call was answered stale past the soft load
// timeout (soft), or that one of its loads hit the load timeout.
func (r *Recorder) TimedOut(ctx context.Context, soft bool) {
	if o := r.of(ctx); o != nil {
		if soft {
			o.soft.Store(true)
		} else {
			o.hard.Store(true)
		}
	}
}

// Size tells whoever wants them the size of an entry read or written.
func (r *Recorder) Size(op string, n int) {
	if r.sizes != nil {
		r.sizes(op, n)
	}
}
