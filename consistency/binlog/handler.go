package binlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/consistency"
	"github.com/go-mysql-org/go-mysql/canal"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// handler receives canal's events on its tailing goroutine. Row events only
// collect keys; at each position canal may save (a transaction's commit, a
// rotation, DDL) the collected keys are invalidated, retrying until they
// are, and only then is the position saved. A crash between the two replays
// the transaction on restart: keys are invalidated at least once.
type handler struct {
	canal.DummyEventHandler
	ctx context.Context // ends the retry loop when Run stops
	s   *Source

	// mu serialises the tailing goroutine with canal.Close, which makes a
	// last OnPosSynced call from another goroutine.
	mu      sync.Mutex
	pending map[*consistency.Target][]string
	seen    map[*consistency.Target]map[string]struct{}
	npend   int
	done    []string // invalidated since the last save, for WithOnCommit
	saved   Position
}

func newHandler(ctx context.Context, s *Source) *handler {
	return &handler{ctx: ctx, s: s,
		pending: make(map[*consistency.Target][]string),
		seen:    make(map[*consistency.Target]map[string]struct{})}
}

func (h *handler) String() string { return "cacheguard binlog invalidator" }

func (h *handler) OnRow(e *canal.RowsEvent) error {
	r, ok := h.s.rules[e.Table.Schema+"."+e.Table.Name]
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, values := range e.Rows {
		for _, k := range r.Keys(Row{table: e.Table, values: values}) {
			h.add(r.Target, k)
		}
	}
	if h.npend >= h.s.opt.flushKeys {
		return h.flush(h.ctx)
	}
	return nil
}

func (h *handler) add(t *consistency.Target, key string) {
	if key == "" {
		return
	}
	set := h.seen[t]
	if set == nil {
		set = make(map[string]struct{})
		h.seen[t] = set
	}
	if _, dup := set[key]; dup {
		return
	}
	set[key] = struct{}{}
	h.pending[t] = append(h.pending[t], key)
	h.npend++
}

// OnTableChanged warns about DDL on a watched table: a TRUNCATE or DROP
// removes rows without row events, so their keys are not invalidated.
func (h *handler) OnTableChanged(_ *replication.EventHeader, schema, table string) error {
	if _, ok := h.s.rules[schema+"."+table]; ok {
		h.s.log.Warn("cacheguard binlog: DDL on a watched table; rows it removed are not invalidated",
			"table", schema+"."+table)
	}
	return nil
}

func (h *handler) OnPosSynced(header *replication.EventHeader, pos mysql.Position, _ mysql.GTIDSet, _ bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := Position{File: pos.Name, Offset: pos.Pos}
	if header == nil {
		// canal.Close's last call, after Run was told to stop: save only
		// if nothing is left to invalidate, and do not retry.
		if h.npend == 0 && p != h.saved && p.File != "" {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 2*time.Second)
			defer cancel()
			h.save(ctx, p)
		}
		return nil
	}
	if err := h.flush(h.ctx); err != nil {
		return err
	}
	h.save(h.ctx, p)
	return nil
}

// save stores p. A failed save is reported, not fatal: the keys are
// invalidated already, and a restart from the older position only repeats
// some deletes.
func (h *handler) save(ctx context.Context, p Position) {
	if err := h.s.positions.Save(ctx, p); err != nil {
		h.report(err)
		return
	}
	h.saved = p
	if h.s.opt.onCommit != nil {
		h.s.opt.onCommit(p, h.done)
	}
	h.done = nil
}

// flush invalidates the pending keys, target by target: Invalidate once
// (which records a retry in the queue if it fails), then plain deletes with
// backoff until they succeed or ctx ends. Tailing waits meanwhile, so the
// position never passes a change whose keys are still cached.
func (h *handler) flush(ctx context.Context) error {
	for t, keys := range h.pending {
		err := t.Invalidate(ctx, keys...)
		for pause := h.s.opt.minBackoff; err != nil; pause = min(2*pause, h.s.opt.maxBackoff) {
			h.report(fmt.Errorf("cacheguard binlog: invalidating %d keys of %s, retrying in %v: %w", len(keys), t.Name(), pause, err))
			tm := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				tm.Stop()
				return ctx.Err()
			case <-tm.C:
			}
			err = t.Delete(ctx, keys...)
			if err != nil && errors.Is(err, consistency.ErrClosed) {
				return err
			}
		}
		h.done = append(h.done, keys...)
		delete(h.pending, t)
		delete(h.seen, t)
	}
	h.npend = 0
	return nil
}

func (h *handler) report(err error) {
	h.s.log.Warn("cacheguard binlog", "err", err)
	if h.s.opt.onError != nil {
		h.s.opt.onError(err)
	}
}
