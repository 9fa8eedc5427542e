package telemetry

import (
	"log/slog"
	"sync"
	"time"
)

// Errors no caller sees are logged, and in an outage the same condition
// repeats on every request (a stale entry served, a fill that failed): one
// line each would flood the log with thousands of lines a second. So each
// kind of report is logged at once the first time, then counted; the first
// report after the interval has passed logs one summary line with the count
// and the last key and error, and starts the next interval. A kind that kept
// quiet for a whole interval is logged at once again. Close logs what is
// still counted. Stats counters carry the volume; the log says that, and
// what, is happening.
//
// Nothing runs in the background: summaries are written by the reports
// themselves (and Close), so an idle Cache costs nothing.

// Kind names a kind of report; it reads as the subject of the summary line
// ("served a stale local entry: 15462 times in 10s").
type Kind string

const (
	StaleServed     Kind = "served a stale local entry"
	Undecodable     Kind = "undecodable entry"
	Uncacheable     Kind = "value not cached"
	FillFailed      Kind = "fill failed"
	RefreshFailed   Kind = "refresh failed"
	LeaseExtend     Kind = "lease extension failed"
	LeaseRelease    Kind = "lease release failed"
	FilterFailed    Kind = "filter failed"
	Breaker         Kind = "circuit breaker changed state"
	Invalidation    Kind = "invalidation not sent"
	Subscription    Kind = "invalidation subscription"
	Generation      Kind = "generation sync"
	InvalidationBad Kind = "invalidation message unusable"
	ObserverPanic   Kind = "observer panicked"
	RateLimiter     Kind = "rate limiter decided without its store"
	CopyFailed      Kind = "hot-key copy not written or deleted"
)

// DefaultLogInterval is WithLogInterval's default.
const DefaultLogInterval = 10 * time.Second

// Logs folds repeated reports of a kind into one line per interval. It is
// safe for concurrent use.
type Logs struct {
	log      *slog.Logger
	interval time.Duration // 0: every report is logged
	now      func() time.Time

	mu      sync.Mutex
	kinds   map[Kind]*logWindow
	nextDue time.Time // earliest end of an interval with reports counted
}

// logWindow is one kind's current interval.
type logWindow struct {
	start   time.Time
	count   uint64 // reports since start not yet logged
	lastKey string
	lastErr error
}

// logLine is a line to write once the lock is released.
type logLine struct {
	kind  Kind
	key   string
	err   error
	count uint64        // 0: a single report
	over  time.Duration // the interval the count covers
}

// NewLogs returns the aggregation of log's lines over interval; now is
// the clock (time.Now when nil).
func NewLogs(log *slog.Logger, interval time.Duration, now func() time.Time) *Logs {
	if now == nil {
		now = time.Now
	}
	return &Logs{log: log, interval: interval, now: now, kinds: map[Kind]*logWindow{}}
}

// Report logs err at once if it is the first of its kind in an interval and
// counts it otherwise; it also writes the summaries of intervals that have
// ended.
func (a *Logs) Report(kind Kind, key string, err error) {
	if a.interval <= 0 {
		a.write(logLine{kind: kind, key: key, err: err})
		return
	}
	now := a.now()
	var lines []logLine
	a.mu.Lock()
	if !a.nextDue.IsZero() && !now.Before(a.nextDue) {
		lines = a.due(now, kind)
	}
	w := a.kinds[kind]
	switch {
	case w == nil || (w.count == 0 && now.Sub(w.start) >= a.interval):
		// First of its kind, or the kind kept quiet for an interval.
		if w == nil {
			w = &logWindow{}
			a.kinds[kind] = w
		}
		w.start = now
		lines = append(lines, logLine{kind: kind, key: key, err: err})
	case now.Sub(w.start) >= a.interval:
		// The interval ended with reports counted: this one closes it.
		lines = append(lines, logLine{kind: kind, key: key, err: err, count: w.count + 1, over: now.Sub(w.start)})
		w.start, w.count, w.lastKey, w.lastErr = now, 0, "", nil
	default:
		if w.count == 0 {
			a.setDue(w.start.Add(a.interval))
		}
		w.count++
		w.lastKey, w.lastErr = key, err
	}
	a.mu.Unlock()
	for _, l := range lines {
		a.write(l)
	}
}

// due takes the summaries of the kinds (other than skip) whose interval has
// ended, and works out the next due time. Called with mu held.
func (a *Logs) due(now time.Time, skip Kind) []logLine {
	var lines []logLine
	a.nextDue = time.Time{}
	for kind, w := range a.kinds {
		if w.count == 0 {
			continue
		}
		end := w.start.Add(a.interval)
		if kind == skip && !now.Before(end) {
			continue // closed by the report that called due
		}
		if !now.Before(end) {
			lines = append(lines, logLine{kind: kind, key: w.lastKey, err: w.lastErr, count: w.count, over: now.Sub(w.start)})
			w.start, w.count, w.lastKey, w.lastErr = now, 0, "", nil
			continue
		}
		a.setDue(end)
	}
	return lines
}

func (a *Logs) setDue(t time.Time) {
	if a.nextDue.IsZero() || t.Before(a.nextDue) {
		a.nextDue = t
	}
}

// Flush writes the summaries of every kind with reports counted (Close).
func (a *Logs) Flush() {
	now := a.now()
	var lines []logLine
	a.mu.Lock()
	for kind, w := range a.kinds {
		if w.count > 0 {
			lines = append(lines, logLine{kind: kind, key: w.lastKey, err: w.lastErr, count: w.count, over: now.Sub(w.start)})
			w.count, w.lastKey, w.lastErr = 0, "", nil
		}
	}
	a.nextDue = time.Time{}
	a.mu.Unlock()
	for _, l := range lines {
		a.write(l)
	}
}

func (a *Logs) write(l logLine) {
	if l.count == 0 {
		a.log.Warn("cacheguard: cache: "+string(l.kind), "key", l.key, "err", l.err)
		return
	}
	a.log.Warn("cacheguard: cache: "+string(l.kind)+" (repeated)",
		"count", l.count, "over", l.over.Round(time.Millisecond), "last_key", l.key, "last_err", l.err)
}
