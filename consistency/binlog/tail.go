package binlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/go-mysql-org/go-mysql/replication"
)

// tailer applies the binlog's events in order on one goroutine. Row events
// collect keys; commits (an XID, a COMMIT query, a DDL statement) mark
// places the position may be saved at. Keys are invalidated, and the
// position saved after them, when no event is waiting, or every saveEvery
// transactions or saveLag, whichever comes first, or when too many keys
// pile up (then without a save inside a transaction). A crash between the
// invalidation and the save replays the transactions since the last save:
// keys are invalidated at least once.
type tailer struct {
	ctx     context.Context // ends the retry loops when Run stops
	s       *Source
	saveFor func(context.Context, Position) error // the store's Save, fenced by the lease in a fleet

	file      string   // current binlog file
	committed Position // the last commit read
	saved     Position
	unsaved   int       // commits since the last save
	since     time.Time // when the first of them was read

	pending map[pendKey][]string
	seen    map[pendKey]map[string]struct{}
	learned map[Filter][]string // keys of rows gained, for their rule's Filter
	npend   int
	done    []string // invalidated since the last save, for WithOnCommit
}

// pendKey groups keys by what is done with them: the target, and the delay
// of the rule's second delete (0: none).
type pendKey struct {
	t      *consistency.Target
	second time.Duration
}

func newTailer(ctx context.Context, s *Source, start Position, save func(context.Context, Position) error) *tailer {
	return &tailer{ctx: ctx, s: s, saveFor: save, file: start.File, committed: start, saved: start,
		pending: make(map[pendKey][]string), seen: make(map[pendKey]map[string]struct{}), learned: make(map[Filter][]string)}
}

// idleWait is how long the tailer waits for the next event before it takes
// the binlog to be idle and saves: long enough to ride over the gaps of a
// backlog being decoded, short against any replica's lag.
const idleWait = 2 * time.Millisecond

func (t *tailer) run(events <-chan eventOrErr) error {
	idle := time.NewTimer(idleWait)
	defer idle.Stop()
	var next *eventOrErr
	for {
		var item eventOrErr
		if next != nil {
			item, next = *next, nil
		} else {
			var ok bool
			select {
			case <-t.ctx.Done():
				return nil
			case item, ok = <-events:
			}
			if !ok {
				return nil // stopped by Run
			}
		}
		if item.err != nil {
			if t.ctx.Err() != nil {
				return nil
			}
			return kind.Errorf("cacheguard: binlog: reading events after %v: %w", t.committed, item.err)
		}
		if err := t.apply(item.ev); err != nil {
			return err
		}
		if t.unsaved == 0 {
			if t.npend >= t.s.opt.flushKeys {
				if err := t.flush(); err != nil {
					return err
				}
			}
			continue
		}
		if t.unsaved < t.s.opt.saveEvery && time.Since(t.since) < t.s.opt.saveLag && t.npend < t.s.opt.flushKeys {
			if len(events) > 0 {
				continue
			}
			// Nothing waiting: save unless an event comes within idleWait.
			idle.Reset(idleWait)
			select {
			case <-t.ctx.Done():
				return nil
			case it, ok := <-events:
				idle.Stop()
				if !ok {
					return nil
				}
				next = &it
				continue
			case <-idle.C:
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		if err := t.save(t.ctx, t.committed); err != nil {
			return err // another instance tails now
		}
	}
}

func (t *tailer) apply(ev *replication.BinlogEvent) error {
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		t.file = string(e.NextLogName)
		if t.unsaved == 0 && t.npend == 0 {
			t.committed = Position{File: t.file, Offset: uint32(e.Position)}
		}
	case *replication.RowsEvent:
		return t.rows(ev.Header, e)
	case *replication.XIDEvent:
		t.commit(ev.Header)
	case *replication.QueryEvent:
		return t.query(ev.Header, e)
	}
	return nil
}

func (t *tailer) commit(h *replication.EventHeader) {
	if h.LogPos == 0 {
		return // an artificial event: no place in the file
	}
	t.committed = Position{File: t.file, Offset: h.LogPos}
	if t.unsaved == 0 {
		t.since = time.Now()
	}
	t.unsaved++
	t.s.stats.tx.Add(1)
	t.s.stats.lag.Store(int64(max(time.Since(time.Unix(int64(h.Timestamp), 0)), 0)))
}

func (t *tailer) rows(h *replication.EventHeader, e *replication.RowsEvent) error {
	if e.Table == nil {
		return nil
	}
	name := string(e.Table.Schema) + "." + string(e.Table.Table)
	r, ok := t.s.rules[name]
	if !ok {
		return nil
	}
	names := e.Table.ColumnNameString()
	if len(names) == 0 || len(names) != int(e.Table.ColumnCount) {
		at := Position{File: t.file, Offset: h.LogPos}
		err := fmt.Errorf("%w: %s at %v (set binlog_row_metadata=FULL; rows written before it was set cannot be keyed safely)",
			ErrNoColumnNames, name, at)
		if !t.s.opt.skipUnnamed {
			return err
		}
		t.s.stats.unnamed.Add(uint64(len(e.Rows)))
		t.report(kind.Errorf("cacheguard: binlog: skipped %d rows: %w", len(e.Rows), err))
		return nil
	}
	unsigned := e.Table.UnsignedMap()
	pk := pendKey{r.Target, r.SecondDelete}
	gained := r.Filter != nil && !deletes(h.EventType)
	update := updates(h.EventType)
	for i, values := range e.Rows {
		for i := range values {
			if unsigned[i] {
				values[i] = toUnsigned(values[i])
			}
		}
		t.s.stats.rows.Add(1)
		keys := r.Keys(Row{names: names, values: values})
		for _, k := range keys {
			t.add(pk, k)
		}
		// An UPDATE's rows come in pairs, before and after: the row gained
		// is the second of each.
		if gained && (!update || i%2 == 1) {
			t.learned[r.Filter] = append(t.learned[r.Filter], keys...)
		}
	}
	return nil
}

// toUnsigned reads a signed integer decoded from an UNSIGNED column as the
// unsigned value it stores.
func toUnsigned(v any) any {
	switch x := v.(type) {
	case int8:
		return uint8(x)
	case int16:
		return uint16(x)
	case int32:
		return uint32(x)
	case int64:
		return uint64(x)
	}
	return v
}

func (t *tailer) add(pk pendKey, key string) {
	if key == "" {
		return
	}
	set := t.seen[pk]
	if set == nil {
		set = make(map[string]struct{})
		t.seen[pk] = set
	}
	if _, dup := set[key]; dup {
		return
	}
	set[key] = struct{}{}
	t.pending[pk] = append(t.pending[pk], key)
	t.npend++
}

// query handles a statement event: BEGIN, COMMIT, or DDL. DDL is its own
// transaction, so it is a commit too; TRUNCATE and DROP of a watched table
// clear its key space (Rule.Clear) first.
func (t *tailer) query(h *replication.EventHeader, e *replication.QueryEvent) error {
	q := strings.TrimSpace(string(e.Query))
	switch {
	case strings.EqualFold(q, "BEGIN"):
		return nil
	case strings.EqualFold(q, "COMMIT"):
		t.commit(h)
		return nil
	}
	changes, err := parseDDL(q, string(e.Schema))
	if err != nil {
		t.s.stats.ddl.Add(1)
		t.report(kind.Errorf("cacheguard: binlog: statement not understood, passed (if it truncated, dropped or renamed a watched table, clear its keys by hand): %q: %w", q, err))
	}
	for _, c := range changes {
		r, ok := t.s.rules[c.table]
		if !ok {
			continue
		}
		if c.clears && r.Clear != nil {
			// Keys of earlier rows first, so that the position after the
			// clear is only saved once everything before it is done.
			if err := t.flush(); err != nil {
				return err
			}
			if err := t.retry(fmt.Sprintf("clearing the keys of %s after %s", c.table, c.verb), func(ctx context.Context) error {
				return r.Clear(ctx)
			}); err != nil {
				return err
			}
			t.s.stats.clears.Add(1)
			t.s.log.Info("cacheguard: binlog: cleared the keys of a truncated or dropped table", "table", c.table, "ddl", c.verb)
			continue
		}
		t.s.stats.ddl.Add(1)
		t.s.log.Warn("cacheguard: binlog: DDL on a watched table", "table", c.table, "ddl", c.verb,
			"note", ddlNote(c))
	}
	t.commit(h)
	return nil
}

func ddlNote(c ddl) string {
	if c.clears {
		return "rows it removed are not invalidated (the rule has no Clear)"
	}
	return "later events name their own columns; nothing to do"
}

// flush invalidates the pending keys, target by target: Invalidate once
// (which records a retry in the queue if it fails), then plain deletes with
// backoff until they succeed or Run stops; then the rule's second delete,
// if any, is recorded. Tailing waits meanwhile, so the position never
// passes a change whose keys are still cached.
func (t *tailer) flush() error {
	// The keys of rows gained first: once their absence is deleted below,
	// no filter may still turn them away.
	for f, keys := range t.learned {
		if err := t.retry(fmt.Sprintf("adding %d keys to a rule's filter", len(keys)), func(ctx context.Context) error {
			return f.Add(ctx, keys...)
		}); err != nil {
			return err
		}
		delete(t.learned, f)
	}
	for pk, keys := range t.pending {
		err := pk.t.Invalidate(t.ctx, keys...)
		if err != nil && !errors.Is(err, consistency.ErrClosed) {
			t.report(kind.Errorf("cacheguard: binlog: invalidating %d keys of %s: %w", len(keys), pk.t.Name(), err))
			err = t.retry(fmt.Sprintf("invalidating %d keys of %s", len(keys), pk.t.Name()), func(ctx context.Context) error {
				return pk.t.Delete(ctx, keys...)
			})
		}
		if err != nil {
			return err
		}
		if pk.second > 0 {
			if err := t.retry(fmt.Sprintf("recording the second delete of %d keys of %s", len(keys), pk.t.Name()), func(ctx context.Context) error {
				return pk.t.InvalidateAfter(ctx, pk.second, keys...)
			}); err != nil {
				return err
			}
		}
		t.s.stats.keys.Add(uint64(len(keys)))
		t.done = append(t.done, keys...)
		delete(t.pending, pk)
		delete(t.seen, pk)
	}
	t.npend = 0
	return nil
}

// retry runs fn until it succeeds, with jittered backoff, reporting each
// failure; it gives up only when Run stops or the queue was closed.
func (t *tailer) retry(what string, fn func(ctx context.Context) error) error {
	err := fn(t.ctx)
	bo := call.Backoff{Min: t.s.opt.minBackoff, Max: t.s.opt.maxBackoff}
	for err != nil {
		if errors.Is(err, consistency.ErrClosed) {
			return err
		}
		pause := bo.Next()
		t.report(kind.Errorf("cacheguard: binlog: %s, retrying in %v: %w", what, pause, err))
		tm := time.NewTimer(pause)
		select {
		case <-t.ctx.Done():
			tm.Stop()
			return t.ctx.Err()
		case <-tm.C:
		}
		err = fn(t.ctx)
	}
	return nil
}

// save stores p. A failed save is reported, not fatal: the keys are
// invalidated already, and a restart from the older position only repeats
// some deletes. A save refused because another instance tails now
// (ErrNotTailer) is returned: this one must stop.
func (t *tailer) save(ctx context.Context, p Position) error {
	t.unsaved = 0
	if err := t.saveFor(ctx, p); err != nil {
		if errors.Is(err, ErrNotTailer) {
			return err
		}
		t.report(err)
		return nil
	}
	t.saved = p
	t.s.stats.saves.Add(1)
	if t.s.opt.onCommit != nil {
		t.s.opt.onCommit(p, t.done)
	}
	t.done = nil
	return nil
}

// saveOnStop saves the last commit when Run stops with nothing left to
// invalidate, so that a restart does not replay what is done.
func (t *tailer) saveOnStop() {
	if t.npend > 0 || t.unsaved == 0 || t.committed == t.saved || t.committed.File == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 2*time.Second)
	defer cancel()
	if err := t.save(ctx, t.committed); err != nil {
		t.report(err)
	}
}

func (t *tailer) report(err error) { t.s.report(err) }
