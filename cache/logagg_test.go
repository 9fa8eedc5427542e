package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// recordedLog keeps the records a slog.Logger writes.
type recordedLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordedLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordedLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordedLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordedLog) WithGroup(string) slog.Handler      { return h }

// lines returns the messages logged so far with their count attribute (0 for
// a single report) and forgets them.
func (h *recordedLog) take() []loggedLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []loggedLine
	for _, r := range h.records {
		l := loggedLine{msg: r.Message}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "count":
				l.count = a.Value.Uint64()
			case "key", "last_key":
				l.key = a.Value.String()
			}
			return true
		})
		out = append(out, l)
	}
	h.records = nil
	return out
}

type loggedLine struct {
	msg   string
	count uint64
	key   string
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Thousands of reports of one kind within an interval make one line at once
// and one summary line with their count; another kind is logged on its own;
// a kind quiet for an interval is logged at once again; flush writes what is
// counted.
func TestLogAggregation(t *testing.T) {
	h := &recordedLog{}
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	a := telemetry.NewLogs(slog.New(h), 10*time.Second, clk.now)
	boom := errors.New("redis down")

	for i := 0; i < 15462; i++ {
		a.Report(telemetry.StaleServed, "k", boom)
	}
	got := h.take()
	if len(got) != 1 || got[0].msg != "cacheguard: cache: "+string(telemetry.StaleServed) || got[0].count != 0 {
		t.Fatalf("first interval logged %+v, want the first report only", got)
	}

	a.Report(telemetry.FillFailed, "other", boom) // another kind: at once
	if got := h.take(); len(got) != 1 || got[0].key != "other" {
		t.Fatalf("another kind logged %+v", got)
	}

	clk.advance(10 * time.Second)
	a.Report(telemetry.StaleServed, "last", boom) // closes the interval
	got = h.take()
	if len(got) != 1 || got[0].count != 15462 || got[0].key != "last" {
		t.Fatalf("after the interval: %+v, want one summary of 15462 ending with key last", got)
	}

	// A report of another kind writes the summary of an ended interval.
	a.Report(telemetry.StaleServed, "a", boom)
	a.Report(telemetry.StaleServed, "b", boom)
	clk.advance(11 * time.Second)
	a.Report(telemetry.FillFailed, "f", boom) // quiet for an interval: at once
	got = h.take()
	if len(got) != 2 {
		t.Fatalf("got %+v, want the stale summary and the fill line", got)
	}
	for _, l := range got {
		switch l.msg {
		case "cacheguard: cache: " + string(telemetry.StaleServed) + " (repeated)":
			if l.count != 2 || l.key != "b" {
				t.Fatalf("summary %+v, want 2 ending with b", l)
			}
		case "cacheguard: cache: " + string(telemetry.FillFailed):
		default:
			t.Fatalf("unexpected line %+v", l)
		}
	}

	a.Report(telemetry.FillFailed, "g", boom)
	a.Flush()
	if got := h.take(); len(got) != 1 || got[0].count != 1 || got[0].key != "g" {
		t.Fatalf("flush wrote %+v", got)
	}
	a.Flush()
	if got := h.take(); len(got) != 0 {
		t.Fatalf("second flush wrote %+v", got)
	}
}

// Interval zero logs every report.
func TestLogAggregationOff(t *testing.T) {
	h := &recordedLog{}
	a := telemetry.NewLogs(slog.New(h), 0, nil)
	for i := 0; i < 3; i++ {
		a.Report(telemetry.StaleServed, "k", errors.New("x"))
	}
	if got := h.take(); len(got) != 3 {
		t.Fatalf("logged %d lines, want 3", len(got))
	}
}

// Through a Cache: the error handler sees every report, the log one line,
// and Close writes the count.
func TestCacheLogsRepeatedErrorsOnce(t *testing.T) {
	_, rdb := newSingle(t)
	h := &recordedLog{}
	var handled int
	var mu sync.Mutex
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithLogger(slog.New(h)), WithLogInterval(time.Hour),
		WithErrorHandler(func(error) { mu.Lock(); handled++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		c.rec.Report(telemetry.StaleServed, "k", errors.New("redis down"))
	}
	if got := h.take(); len(got) != 1 {
		t.Fatalf("logged %+v, want one line", got)
	}
	c.Close()
	if got := h.take(); len(got) != 1 || got[0].count != 99 {
		t.Fatalf("Close logged %+v, want one summary of 99", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if handled != 100 {
		t.Fatalf("error handler saw %d errors, want 100", handled)
	}
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLogInterval(-time.Second)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("negative interval: %v", err)
	}
}
