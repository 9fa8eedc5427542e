package stock

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

// newSQLite returns a store on a fresh SQLite file with its tables.
func newSQLite(t testing.TB) *SQLStore {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "stock.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	s := NewSQLStore(db, "")
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func newConsumer(t testing.TB, inv *Inventory, sink Sink, opts ...Option) *Consumer {
	t.Helper()
	c, err := NewConsumer(inv, sink, append([]Option{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drain runs passes until one finds nothing to do.
func drain(t testing.TB, c *Consumer) {
	t.Helper()
	for i := 0; ; i++ {
		n, err := c.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if i > 10000 {
			t.Fatal("consumer never ran dry")
		}
	}
}

func ordersByID(t testing.TB, s *SQLStore, sku string) map[string]Order {
	t.Helper()
	os, err := s.Orders(context.Background(), sku)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Order{}
	for _, o := range os {
		m[o.RequestID] = o
	}
	return m
}
