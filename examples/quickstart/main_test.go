package main

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The tour does what it prints: one query for a hundred readers of a cold
// key, none for an id the filter turns away, one more to reload the row the
// update changed, which the cache then serves, and one to load the row
// inserted.
func TestQuickstart(t *testing.T) {
	_, rdb := redistest.Single(t)
	db := newUserDB(1000)
	if err := run(context.Background(), rdb, db); err != nil {
		t.Fatal(err)
	}
	if n := db.Queries(); n != 3 {
		t.Fatalf("%d database queries, want 3 (the cold key, its reload after the update, the new row)", n)
	}
}
