package binlog

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// collectUntil gathers the keys of the commits the Source reports until it
// has saved a position at or past end.
func (e *env) collectUntil(t *testing.T, end Position) []string {
	t.Helper()
	seen := map[string]bool{}
	limit := time.NewTimer(30 * time.Second) // a failure guard
	defer limit.Stop()
	for {
		select {
		case ci := <-e.commit:
			for _, k := range ci.keys {
				seen[k] = true
			}
			if ci.pos.File > end.File || (ci.pos.File == end.File && ci.pos.Offset >= end.Offset) {
				var keys []string
				for k := range seen {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				return keys
			}
		case <-limit.C:
			t.Fatalf("position never reached %v; keys so far %v", end, seen)
		}
	}
}

// Rows written before an ALTER TABLE (a column added in front, one dropped,
// one moved) are replayed after it: their keys come from the columns they
// were written with, never from today's layout.
func TestReplayAcrossAlterTable(t *testing.T) {
	e := newEnv(t, 3, nil)
	p0, _, _ := e.pos.Load(context.Background())
	e.m.exec(t, e.db,
		"UPDATE users SET name = 'a' WHERE id = 1",
		"ALTER TABLE users ADD COLUMN age INT FIRST",
		"UPDATE users SET name = 'b' WHERE id = 2",
		"ALTER TABLE users DROP COLUMN age",
		"ALTER TABLE users MODIFY name VARCHAR(64) FIRST",
		"UPDATE users SET name = 'c' WHERE id = 3",
	)
	end := e.m.position(t)
	if err := e.pos.Save(context.Background(), p0); err != nil {
		t.Fatal(err)
	}
	e.start(t, 104)
	keys := e.collectUntil(t, end)
	if !slices.Equal(keys, []string{"1", "2", "3"}) {
		t.Fatalf("replay across ALTER TABLE invalidated %v, want [1 2 3]", keys)
	}
}

// A table renamed or dropped after its rows changed does not stop a replay
// of those changes: they are invalidated, and the position moves past the
// DDL.
func TestReplayPastRenamedAndDroppedTables(t *testing.T) {
	e := newEnv(t, 3, nil)
	p0, _, _ := e.pos.Load(context.Background())
	e.m.exec(t, e.db,
		"UPDATE users SET name = 'a' WHERE id = 1",
		"RENAME TABLE users TO people",
		"UPDATE people SET name = 'b' WHERE id = 2",
		"RENAME TABLE people TO users",
		"UPDATE users SET name = 'c' WHERE id = 3",
		"CREATE TABLE other (id INT PRIMARY KEY)",
		"INSERT INTO other VALUES (1)",
		"DROP TABLE other",
		"DROP TABLE users",
	)
	end := e.m.position(t)
	if err := e.pos.Save(context.Background(), p0); err != nil {
		t.Fatal(err)
	}
	e.start(t, 105)
	keys := e.collectUntil(t, end)
	if !slices.Contains(keys, "1") || !slices.Contains(keys, "3") {
		t.Fatalf("replay past RENAME/DROP invalidated %v, want 1 and 3", keys)
	}
}

// Rows logged without column names (binlog_row_metadata off when they were
// written) cannot be keyed safely: a replay stops with ErrNoColumnNames, or
// with WithSkipUnnamedRows counts and skips them and goes on.
func TestRowsWithoutColumnNames(t *testing.T) {
	e := newEnv(t, 2, nil)
	p0, _, _ := e.pos.Load(context.Background())
	e.m.exec(t, "", "SET GLOBAL binlog_row_metadata = 'NO_LOG'")
	e.m.exec(t, e.db, "UPDATE users SET name = 'a' WHERE id = 1")
	e.m.exec(t, "", "SET GLOBAL binlog_row_metadata = 'FULL'")
	e.m.exec(t, e.db, "UPDATE users SET name = 'b' WHERE id = 2")
	end := e.m.position(t)

	src, err := New(Config{Addr: e.m.Addr, User: "root", Flavor: mysql.MariaDBFlavor, ServerID: 106},
		e.pos, []Rule{{Schema: e.db, Table: "users", Target: e.users, Keys: Column("id")}}, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := src.Run(ctx); !errors.Is(err, ErrNoColumnNames) {
		t.Fatalf("Run = %v, want ErrNoColumnNames", err)
	}
	if p, _, _ := e.pos.Load(ctx); p != p0 {
		t.Fatalf("position moved to %v past an unkeyable row", p)
	}

	e.start(t, 107, WithSkipUnnamedRows())
	keys := e.collectUntil(t, end)
	if !slices.Equal(keys, []string{"2"}) {
		t.Fatalf("keys %v, want only the named row's 2", keys)
	}
	st := e.src.Stats()
	if st.UnnamedRows != 2 {
		t.Fatalf("stats %+v, want the update's 2 images counted as skipped", st)
	}
	// The skip was reported (an error counted), and the commits read give a
	// lag against the local server's clock: above zero (its timestamps are
	// whole seconds), well under a minute.
	if st.Errors != 1 || st.Transactions == 0 || st.Lag <= 0 || st.Lag > time.Minute {
		t.Fatalf("stats %+v, want 1 error and a lag in (0, 1m]", st)
	}
}
