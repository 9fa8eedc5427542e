package binlog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/consistency"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Rule routes the row changes of one table to the cache target they
// invalidate.
type Rule struct {
	Schema string // database name
	Table  string
	Target *consistency.Target
	// Keys returns the cache keys a row image invalidates. It is called for
	// every image of a change: the new row of an INSERT, the old row of a
	// DELETE, and both rows of an UPDATE (so a changed unique column
	// invalidates the key under its old value too).
	Keys func(Row) []string
	// SecondDelete, if positive, also records a delete of the same keys
	// that long after the first one, in the target's durable queue: for
	// readers of replicas that apply the change later than the source
	// reads it, a delayed double delete driven by the binlog.
	SecondDelete time.Duration
	// Clear, if set, is called when the table is truncated or dropped,
	// changes that carry no rows: it must invalidate every key of the table
	// (ScanDelete does it for a cache prefix). Without it such DDL is
	// logged and counted (Stats.TableDDL) and the keys stay until their TTL.
	Clear func(ctx context.Context) error
	// Filter, if set, learns the keys of the rows this table gains: the
	// keys of every inserted row, and of every row as an UPDATE leaves it,
	// are added (a bloom.Fleet, so every instance finds them; any filter
	// with Add fits) before the change's keys are invalidated, which
	// deletes any absence of them cached before. A service whose inserts
	// reach the database this Source watches then needs no Add of its own.
	Filter Filter
}

// Filter is what a Rule's Filter must do: record keys that now exist.
type Filter interface {
	Add(ctx context.Context, keys ...string) error
}

// Column returns a Keys function that keys a row by the value of one column
// (typically the primary key), formatted as by fmt.Sprint. Rows whose column
// is NULL invalidate nothing.
func Column(name string) func(Row) []string {
	return func(r Row) []string {
		v, ok := r.Value(name)
		if !ok || v == nil {
			return nil
		}
		if b, isBytes := v.([]byte); isBytes {
			return []string{string(b)}
		}
		return []string{fmt.Sprint(v)}
	}
}

// Row is one image of a changed row, with the column names the binlog event
// carried: the table's columns when the row was written, not today's.
type Row struct {
	names  []string
	values []any
}

// Value returns the named column's value (case-insensitive name) as decoded
// from the binlog (ints, floats, strings, []byte, nil for NULL); false if
// the row has no such column.
func (r Row) Value(column string) (any, bool) {
	for i, n := range r.names {
		if strings.EqualFold(n, column) {
			if i >= len(r.values) {
				return nil, false
			}
			return r.values[i], true
		}
	}
	return nil, false
}

// deletes and updates tell the row events by their type.
func deletes(t replication.EventType) bool {
	switch t {
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

func updates(t replication.EventType) bool {
	switch t {
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}
