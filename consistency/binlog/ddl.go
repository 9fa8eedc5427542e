package binlog

import (
	"context"
	"fmt"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	// The parser needs a value driver for literals in DDL (DEFAULT 0).
	"github.com/cacheguard/cacheguard/internal/pipe"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/redis/go-redis/v9"
)

// ddl is one table a DDL statement touches.
type ddl struct {
	table  string // "schema.table"
	verb   string
	clears bool // the table's rows went away or were swapped for others
}

// parseDDL lists the tables a statement changes. TRUNCATE, DROP and RENAME
// (either side, ALTER TABLE ... RENAME too) leave the name with other rows
// or none, without a row event: they clear. Other ALTERs only change the
// layout, which later row events carry themselves. Statements the parser
// does not know (triggers, procedures) are returned as an error.
func parseDDL(q, schema string) (out []ddl, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("parser panicked: %v", p) // exotic syntax must not stop tailing
		}
	}()
	stmts, _, err := parser.New().Parse(q, "", "")
	if err != nil {
		return nil, err
	}
	name := func(tn *ast.TableName) string {
		db := tn.Schema.String()
		if db == "" {
			db = schema
		}
		return db + "." + tn.Name.String()
	}
	for _, st := range stmts {
		switch s := st.(type) {
		case *ast.TruncateTableStmt:
			out = append(out, ddl{name(s.Table), "TRUNCATE", true})
		case *ast.DropTableStmt:
			for _, tn := range s.Tables {
				out = append(out, ddl{name(tn), "DROP", true})
			}
		case *ast.RenameTableStmt:
			for _, tt := range s.TableToTables {
				out = append(out, ddl{name(tt.OldTable), "RENAME", true}, ddl{name(tt.NewTable), "RENAME", true})
			}
		case *ast.AlterTableStmt:
			clears := false
			for _, spec := range s.Specs {
				if spec.Tp == ast.AlterTableRenameTable && spec.NewTable != nil {
					clears = true
					out = append(out, ddl{name(spec.NewTable), "ALTER RENAME", true})
				}
			}
			out = append(out, ddl{name(s.Table), "ALTER", clears})
		}
	}
	return out, nil
}

// ScanDelete returns a Rule.Clear that deletes every key matching pattern
// (a SCAN MATCH pattern: the cache's prefix followed by *) on every master
// of rdb, SCAN COUNT 1000 at a time, each batch with one UNLINK per key in
// a pipeline. The work is bounded per round trip and never blocks Redis; it
// grows with the number of keys under the prefix, which is the price of not
// putting a table generation in every key (a generation would make the
// clear O(1) but cost every read an extra lookup, and change the key
// layout). Keys filled after the scan passed them were loaded after the
// TRUNCATE or DROP committed, so they are current.
func ScanDelete(rdb redis.UniversalClient, pattern string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if pattern == "" || pattern == "*" {
			return fmt.Errorf("cacheguard: binlog: refusing to clear pattern %q", pattern)
		}
		clear := func(ctx context.Context, c *redis.Client) error {
			var cursor uint64
			for {
				keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
				if err != nil {
					return err
				}
				if len(keys) > 0 {
					if _, err := pipe.Run(ctx, c.Pipeline(), func(p redis.Pipeliner) error {
						for _, k := range keys {
							p.Unlink(ctx, k)
						}
						return nil
					}); err != nil {
						return err
					}
				}
				if next == 0 {
					return nil
				}
				cursor = next
			}
		}
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			return c.ForEachMaster(ctx, clear)
		case *redis.Client:
			return clear(ctx, c)
		case *redis.Ring:
			return c.ForEachShard(ctx, clear)
		default:
			return fmt.Errorf("cacheguard: binlog: ScanDelete: unsupported client %T", rdb)
		}
	}
}
