package binlog

import (
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// Rows inserted into the watched table, by anyone, are learned by the rule's
// filter: a cache behind a fleet filter on another instance (another client,
// another filter copy) reads the new row instead of answering ErrNotFound,
// and an UPDATE that moves a row to a new key is learned too. Nobody calls
// Add.
func TestInsertedRowsLearnedByTheRuleFilter(t *testing.T) {
	e := newEnv(t, 3, nil)
	ctx := t.Context()
	name := redistest.Name(t)
	const interval, timeout = 200 * time.Millisecond, 200 * time.Millisecond
	open := func() *bloom.Fleet {
		f, err := bloom.NewFleet(ctx, redistest.FromSpec(t, redistest.Spec(e.rdb), nil), name, 10_000, 0.01,
			bloom.WithHealthCheck(interval, timeout), bloom.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	srcFilter, readerFilter := open(), open()
	if err := srcFilter.Rebuild(ctx, func(yield func(string, error) bool) {
		for _, k := range []string{"1", "2", "3"} {
			if !yield(k, nil) {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	reader, err := cache.New(redistest.FromSpec(t, redistest.Spec(e.rdb), nil), cache.Values[string]{},
		cache.WithPrefix("users:"), cache.WithBloom(readerFilter), cache.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !readerFilter.Ready() || readerFilter.Stats().SafeMode != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader's filter never got ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := reader.Get(ctx, "4", e.load); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("before the insert: %v", err)
	}
	e.rule = func(r *Rule) { r.Filter = srcFilter }
	e.start(t, 601)
	for _, step := range []struct{ sql, key, want string }{
		{"INSERT INTO users VALUES (4, 'new')", "4", "new"},
		{"UPDATE users SET id = 10 WHERE id = 3", "10", "name3"},
	} {
		e.m.exec(t, e.db, step.sql)
		start := time.Now()
		for {
			v, err := reader.Get(ctx, step.key, e.load)
			if err == nil && v == step.want {
				t.Logf("%s: read on the other instance after %v", step.sql, time.Since(start).Round(time.Millisecond))
				break
			}
			if err != nil && !errors.Is(err, cache.ErrNotFound) {
				t.Fatal(err)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: key %s still %q, %v", step.sql, step.key, v, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
