package main

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// bucket is the plot's and the peak rate's time resolution.
const bucket = 100 * time.Millisecond

// meter counts one run: database queries over time, and every request's
// latency and outcome. Everything is atomic: requests finish concurrently.
type meter struct {
	start   time.Time
	queries []atomic.Int64 // queries sent to the database, per bucket
	total   atomic.Int64   // queries sent to the database
	refused atomic.Int64   // of total, refused for overload
	redis   []atomic.Int64 // Redis round trips, per bucket
	// per bucket of the time a request or query was due: refused queries,
	// failed requests and request latencies, for the chart's strips.
	refusedAt []atomic.Int64
	failedAt  []atomic.Int64
	latAt     []histogram

	requests atomic.Int64
	failed   atomic.Int64
	lat      histogram

	mu     sync.Mutex
	errs   map[string]int64 // failures by cause
	loads  []time.Duration  // when each successful query ended, since start
	filled time.Duration    // when the run's warm-up fill ended, if it had one
}

func newMeter(span time.Duration) *meter {
	n := int(span/bucket) + 1
	return &meter{start: time.Now(), queries: make([]atomic.Int64, n), redis: make([]atomic.Int64, n),
		refusedAt: make([]atomic.Int64, n), failedAt: make([]atomic.Int64, n), latAt: make([]histogram, n),
		errs: map[string]int64{}}
}

// at returns the bucket of moment t, or -1 past the meter's span.
func (m *meter) at(t time.Time) int {
	i := int(t.Sub(m.start) / bucket)
	if i < 0 || i >= len(m.queries) {
		return -1
	}
	return i
}

// refuse counts a query the database refused, in the bucket in which it
// was sent (it is refused a queue wait later), so that the chart shades it
// under the queries it is part of.
func (m *meter) refuse(sent time.Time) {
	m.refused.Add(1)
	if i := m.at(sent); i >= 0 {
		m.refusedAt[i].Add(1)
	}
}

// loaded notes a query that returned a row: with a fixed TTL, the moment
// the key it fills will expire is ttl after the last of these.
func (m *meter) loaded() {
	d := time.Since(m.start)
	m.mu.Lock()
	if len(m.loads) < 100_000 {
		m.loads = append(m.loads, d)
	}
	m.mu.Unlock()
}

// markFilled notes that the run's warm-up fill has just ended.
func (m *meter) markFilled() {
	m.mu.Lock()
	m.filled = time.Since(m.start)
	m.mu.Unlock()
}

func (m *meter) redisCall() {
	if i := int(time.Since(m.start) / bucket); i < len(m.redis) {
		m.redis[i].Add(1)
	}
}

func (m *meter) sent() {
	m.total.Add(1)
	if i := int(time.Since(m.start) / bucket); i < len(m.queries) {
		m.queries[i].Add(1)
	}
}

// done records one request that was due at start.
func (m *meter) done(start time.Time, err error) {
	m.requests.Add(1)
	lat := time.Since(start)
	m.lat.record(lat)
	i := m.at(start)
	if i >= 0 {
		m.latAt[i].record(lat)
	}
	if err != nil {
		m.fail(errorKind(err))
		if i >= 0 {
			m.failedAt[i].Add(1)
		}
	}
}

// p99s returns the p99 latency of the requests due in each of the first n
// buckets (0 where none were).
func (m *meter) p99s(n int) []time.Duration {
	out := make([]time.Duration, min(n, len(m.latAt)))
	for i := range out {
		out[i] = m.latAt[i].quantile(0.99)
	}
	return out
}

func (m *meter) fail(kind string) {
	m.failed.Add(1)
	m.mu.Lock()
	m.errs[kind]++
	m.mu.Unlock()
}

// timeline returns a per-bucket count, up to the last bucket that saw any
// or upto buckets, whichever is longer.
func (m *meter) timeline(counts []atomic.Int64, upto int) []int64 {
	out := make([]int64, 0, len(counts))
	last := min(upto, len(counts))
	for i := range counts {
		v := counts[i].Load()
		out = append(out, v)
		if v > 0 {
			last = max(last, i+1)
		}
	}
	return out[:last]
}

// peak returns the largest number of queries sent in one bucket, per second.
func peak(series []int64) int64 {
	var p int64
	for _, v := range series {
		p = max(p, v)
	}
	return p * int64(time.Second/bucket)
}

// errorCounts returns the failure causes, most frequent first.
func (m *meter) errorCounts() []errCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]errCount, 0, len(m.errs))
	for k, n := range m.errs {
		out = append(out, errCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].kind < out[j].kind
	})
	return out
}

type errCount struct {
	kind string
	n    int64
}

// errorKind names the cause of a failed request for the report.
func errorKind(err error) string {
	switch {
	case errors.Is(err, errOverloaded):
		return "database refused (overload)"
	case errors.Is(err, errShed):
		return "shed (too many requests in flight)"
	case errors.Is(err, cache.ErrRedis):
		return "redis error"
	case errors.Is(err, cache.ErrWaitTimeout):
		return "wait for another fill timed out"
	case isTimeout(err):
		return "request timed out"
	}
	return "other: " + firstLine(err.Error())
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func firstLine(s string) string {
	const most = 110
	for i, r := range s {
		if r == '\n' || i >= most {
			return s[:i]
		}
	}
	return s
}

// histogram is a lock-free latency histogram with logarithmic buckets about
// 3% wide, from 1µs to over a minute.
type histogram struct {
	counts [histBuckets]atomic.Int64
}

const (
	histBuckets = 640
	histGrowth  = 1.03
)

var histLog = math.Log(histGrowth)

func (h *histogram) record(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	i := 0
	if us > 1 {
		i = int(math.Log(us) / histLog)
	}
	h.counts[min(i, histBuckets-1)].Add(1)
}

// quantile returns the latency below which a fraction q of requests fell
// (the upper edge of its bucket), or 0 with no requests.
func (h *histogram) quantile(q float64) time.Duration {
	var total int64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(math.Pow(histGrowth, float64(i+1)) * float64(time.Microsecond))
		}
	}
	return time.Duration(math.Pow(histGrowth, histBuckets) * float64(time.Microsecond))
}
