package benchmarks

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// errNoRow is what the simulated database answers for an id it does not hold.
// Each library's adapter turns it into that library's own "not found".
var errNoRow = errors.New("no such row")

// simDB stands in for the database behind every cache: a query takes a fixed
// latency, at most conns queries run at once (the others queue, as they would
// on a connection pool), and every query is counted, so that DB load is
// measured rather than guessed. Rows are the ids 0..rows-1; each has a version
// that writes bump (the invalidation race reads it).
type simDB struct {
	latency atomic.Int64 // time.Duration
	conns   chan struct{}
	rows    int

	queries  atomic.Int64
	inflight atomic.Int64 // queued + running
	peak     atomic.Int64 // highest inflight seen

	versions []atomic.Int64 // per id, for the write race; nil otherwise

	mu       sync.Mutex
	timeline *timeline // queries per time bucket; nil unless recording
}

// newSimDB returns a database of rows rows answering in latency with conns
// connections (0: unlimited).
func newSimDB(rows int, latency time.Duration, conns int) *simDB {
	d := &simDB{rows: rows}
	d.latency.Store(int64(latency))
	if conns > 0 {
		d.conns = make(chan struct{}, conns)
	}
	return d
}

// withVersions gives every row a version counter (for the write race).
func (d *simDB) withVersions() *simDB {
	d.versions = make([]atomic.Int64, d.rows)
	return d
}

// load is the query every cache's loader runs: SELECT … WHERE id = key.
func (d *simDB) load(ctx context.Context, key string) (row, error) {
	d.queries.Add(1)
	n := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if t := d.recording(); t != nil {
		t.add(time.Now())
	}
	if d.conns != nil {
		select {
		case d.conns <- struct{}{}:
			defer func() { <-d.conns }()
		case <-ctx.Done():
			return row{}, ctx.Err()
		}
	}
	// The row is read when the query starts and reaches the caller one
	// latency later, as with a real database: an update committed in
	// between is not in the answer.
	id, err := strconv.Atoi(key)
	found := err == nil && id >= 0 && id < d.rows
	var r row
	if found {
		r = makeRow(id)
		if d.versions != nil {
			r.Version = d.versions[id].Load()
		}
	}
	if lat := time.Duration(d.latency.Load()); lat > 0 {
		t := time.NewTimer(lat)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return row{}, ctx.Err()
		}
	}
	if !found {
		return row{}, errNoRow
	}
	return r, nil
}

// setLatency changes the query latency from now on.
func (d *simDB) setLatency(l time.Duration) { d.latency.Store(int64(l)) }

// update bumps the version of row id, as a committed UPDATE would, and
// returns the new version.
func (d *simDB) update(id int) int64 { return d.versions[id].Add(1) }

// reset zeroes the counters between measurements.
func (d *simDB) reset() {
	d.queries.Store(0)
	d.peak.Store(d.inflight.Load())
}

// record starts counting queries per bucket from now on.
func (d *simDB) record(bucket time.Duration) *timeline {
	t := &timeline{start: time.Now(), bucket: bucket}
	d.mu.Lock()
	d.timeline = t
	d.mu.Unlock()
	return t
}

func (d *simDB) recording() *timeline {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.timeline
}

// timeline counts queries per fixed time bucket, to find the peak rate.
type timeline struct {
	start  time.Time
	bucket time.Duration
	mu     sync.Mutex
	counts []int
}

func (t *timeline) add(at time.Time) {
	i := int(at.Sub(t.start) / t.bucket)
	if i < 0 {
		return
	}
	t.mu.Lock()
	for len(t.counts) <= i {
		t.counts = append(t.counts, 0)
	}
	t.counts[i]++
	t.mu.Unlock()
}

// peakPerSecond is the highest bucket count scaled to queries per second.
func (t *timeline) peakPerSecond() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	peak := 0
	for _, c := range t.counts {
		peak = max(peak, c)
	}
	return float64(peak) * float64(time.Second) / float64(t.bucket)
}

// makeRow builds the row stored under id: about 130 bytes of JSON, a typical
// user row.
func makeRow(id int) row {
	return row{
		ID:        int64(id),
		Name:      "user " + strconv.Itoa(id),
		Email:     "user" + strconv.Itoa(id) + "@example.com",
		CreatedAt: time.Unix(1700000000+int64(id), 0).UTC(),
		Score:     float64(id%1000) / 10,
	}
}
