package binlog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Run refuses a server whose binlog cannot drive invalidation, naming the
// setting and the value it needs.
func TestServerSettingsCheckedAtStart(t *testing.T) {
	e := newEnv(t, 1, nil)
	for _, c := range []struct{ name, bad, good string }{
		{"binlog_row_image", "MINIMAL", "FULL"},
		{"binlog_row_metadata", "MINIMAL", "FULL"},
		{"binlog_format", "STATEMENT", "ROW"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.m.exec(t, "", "SET GLOBAL "+c.name+" = '"+c.bad+"'")
			defer e.m.exec(t, "", "SET GLOBAL "+c.name+" = '"+c.good+"'")
			src, err := New(Config{Addr: e.m.Addr, User: "root", Flavor: mysql.MariaDBFlavor, ServerID: 120},
				e.pos, []Rule{{Schema: e.db, Table: "users", Target: e.users, Keys: Column("id")}}, WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = src.Run(ctx)
			if !errors.Is(err, ErrServerSetting) || !strings.Contains(err.Error(), c.name+"=") {
				t.Fatalf("Run = %v, want ErrServerSetting naming %s", err, c.name)
			}
			t.Log(err)
		})
	}
}

// TRUNCATE and DROP of a watched table clear its whole key space through
// the rule's Clear (ScanDelete over the cache's prefix); other tables' keys
// stay.
func TestTruncateAndDropClearTheTablesKeys(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 5, nil)
	e.rule = func(r *Rule) { r.Clear = ScanDelete(e.crdb, "users:*") }
	e.start(t, 121)
	if err := e.crdb.Set(ctx, "orders:1", "other cache", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"TRUNCATE TABLE users", "DROP TABLE users"} {
		for i := 1; i <= 5; i++ {
			e.get(t, itoa(i))
		}
		before := e.src.Stats().Clears
		e.m.exec(t, e.db, stmt)
		deadline := time.NewTimer(30 * time.Second) // a failure guard
		for e.src.Stats().Clears == before {
			select {
			case <-e.commit:
			case <-deadline.C:
				t.Fatalf("%s cleared nothing", stmt)
			}
		}
		deadline.Stop()
		if n := len(e.crdb.Keys(ctx, "users:*").Val()); n != 0 {
			t.Fatalf("after %s %d keys of the table are left", stmt, n)
		}
		if e.crdb.Exists(ctx, "orders:1").Val() != 1 {
			t.Fatalf("%s cleared another cache's key", stmt)
		}
		if stmt == "TRUNCATE TABLE users" {
			if got := e.get(t, "1"); got != "<none>" {
				t.Fatalf("after TRUNCATE key 1 = %q", got)
			}
			e.m.exec(t, e.db, "INSERT INTO users VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e')")
			e.waitKeys(t, "1", "5")
		}
	}
}

// A rule with SecondDelete records a delayed delete of the keys in the
// durable queue besides the immediate one.
func TestRuleSecondDeleteIsRecorded(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, nil)
	e.rule = func(r *Rule) { r.SecondDelete = time.Hour }
	e.start(t, 122)
	e.m.exec(t, e.db, "UPDATE users SET name = 'x' WHERE id IN (1, 2)")
	e.waitKeys(t, "1", "2")
	if n, err := e.q.Pending(ctx); err != nil || n != 1 {
		t.Fatalf("pending %d, %v; want the second delete recorded", n, err)
	}
}

// The binlog's delete keeps the version high-water mark: a versioned write
// older than one stored before the row changed is refused afterwards.
func TestBinlogDeleteKeepsVersion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1, nil)
	e.start(t, 123)
	if ok, err := e.c.SetVersioned(ctx, "1", "v5", 5); !ok || err != nil {
		t.Fatal(ok, err)
	}
	e.m.exec(t, e.db, "UPDATE users SET name = 'x' WHERE id = 1")
	e.waitKeys(t, "1")
	if ok, err := e.c.SetVersioned(ctx, "1", "v3", 3); ok || err != nil {
		t.Fatalf("late SetVersioned(3) after the binlog delete: %v, %v; want refused", ok, err)
	}
	if got := e.get(t, "1"); got != "x" {
		t.Fatalf("read after the delete %q, want the row reloaded", got)
	}
}

// Positions are saved in batches during a catch-up, never more than the
// configured number of transactions apart, and the last one is saved.
func TestPositionSavedInBoundedBatches(t *testing.T) {
	e := newEnv(t, 1, nil)
	p0, _, _ := e.pos.Load(context.Background())
	var stmts []string
	for i := range 200 {
		stmts = append(stmts, "UPDATE users SET name = 'v"+itoa(i)+"' WHERE id = 1")
	}
	e.m.exec(t, e.db, stmts...)
	end := e.m.position(t)
	if err := e.pos.Save(context.Background(), p0); err != nil {
		t.Fatal(err)
	}
	e.start(t, 124, WithSaveEvery(50, time.Hour))
	e.waitPos(t, end)
	st := e.src.Stats()
	if st.Transactions < 200 || st.Saves < 4 || st.Saves > 200 {
		t.Fatalf("stats %+v: want 200 transactions saved at least every 50", st)
	}
	t.Logf("200 transactions, %d saves", st.Saves)
}
