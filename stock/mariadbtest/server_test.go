package mariadbtest

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// One MariaDB server per test binary (internal/redistest); each test uses its
// own database.
func TestMain(m *testing.M) { redistest.Main(m) }

// newDB returns a connection pool to a fresh database on the shared server.
func newDB(t *testing.T) *sql.DB {
	t.Helper()
	addr := redistest.SharedMariaDB(t).Addr
	root, err := sql.Open("mysql", "root@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name := fmt.Sprintf("t%d", time.Now().UnixNano())
	if _, err := root.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "root@tcp("+addr+")/"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
