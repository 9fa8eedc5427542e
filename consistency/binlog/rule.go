package binlog

import (
	"fmt"

	"github.com/cacheguard/cacheguard/consistency"
	"github.com/go-mysql-org/go-mysql/schema"
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

// Row is one image of a changed row.
type Row struct {
	table  *schema.Table
	values []any
}

// Value returns the named column's value as decoded from the binlog (ints,
// floats, strings, []byte, nil for NULL); false if the table has no such
// column.
func (r Row) Value(column string) (any, bool) {
	i := r.table.FindColumn(column)
	if i < 0 || i >= len(r.values) {
		return nil, false
	}
	return r.values[i], true
}
