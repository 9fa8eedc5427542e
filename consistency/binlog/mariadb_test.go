package binlog

import (
	"context"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The tests share one MariaDB server per test binary (internal/redistest:
// its own datadir and port, binary logging on in ROW format). Each test uses
// its own database.
type mariadb struct {
	Addr string
}

func TestMain(m *testing.M) { redistest.Main(m) }

// needMariaDB returns the shared server, starting it on first use. Without
// mariadbd the test is skipped, or fails under CACHEGUARD_REQUIRE_MARIADB=1.
func needMariaDB(t testing.TB) *mariadb {
	t.Helper()
	return &mariadb{Addr: redistest.SharedMariaDB(t).Addr}
}

// exec runs SQL statements on db (may be empty) and fails the test on error.
func (m *mariadb) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	c, err := client.Connect(m.Addr, "root", "", db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.Execute(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// query returns the first column of the first row, and false for no row.
func (m *mariadb) query(ctx context.Context, db, q string, args ...any) (string, bool, error) {
	c, err := client.Connect(m.Addr, "root", "", db)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	r, err := c.Execute(q, args...)
	if err != nil {
		return "", false, err
	}
	if r.RowNumber() == 0 {
		return "", false, nil
	}
	s, err := r.GetString(0, 0)
	return s, err == nil, err
}

// position returns the server's current binlog position.
func (m *mariadb) position(t testing.TB) Position {
	t.Helper()
	c, err := client.Connect(m.Addr, "root", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute("SHOW BINLOG STATUS")
	if err != nil {
		t.Fatal(err)
	}
	name, _ := r.GetString(0, 0)
	pos, _ := r.GetInt(0, 1)
	return Position{File: name, Offset: uint32(pos)}
}
