// Command quickstart wraps a small SQLite-backed user repository with
// cacheguard and shows what the cache does: a miss that loads, hits, a cached
// absence, a hundred concurrent readers of a cold key sharing one query, and a
// write that invalidates.
//
//	go run ./examples/quickstart            # spawned redis-server, else miniredis
//	go run ./examples/quickstart -redis localhost:6379
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/devredis"
	_ "modernc.org/sqlite"
)

type User struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// repo is the repository being cached: every query is counted.
type repo struct {
	db      *sql.DB
	queries atomic.Int64
}

func openRepo() (*repo, error) {
	db, err := sql.Open("sqlite", "file:quickstart?mode=memory&cache=shared")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return nil, err
	}
	for i := 1; i <= 1000; i++ {
		if _, err := db.Exec(`INSERT INTO users (id, name) VALUES (?, ?)`, i, fmt.Sprintf("user-%d", i)); err != nil {
			return nil, err
		}
	}
	return &repo{db: db}, nil
}

// FindUser is a cache.Loader: it returns cache.ErrNotFound for a missing row.
func (r *repo) FindUser(ctx context.Context, id string) (User, error) {
	r.queries.Add(1)
	time.Sleep(20 * time.Millisecond) // a database that takes its time
	var u User
	err := r.db.QueryRowContext(ctx, `SELECT id, name FROM users WHERE id = ?`, id).Scan(&u.ID, &u.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("user %s: %w", id, cache.ErrNotFound)
	}
	return u, err
}

func (r *repo) Rename(ctx context.Context, id string, name string) error {
	_, err := r.db.ExecContext(ctx, `UPDATE users SET name = ? WHERE id = ?`, name, id)
	return err
}

func main() {
	addr := flag.String("redis", "", "Redis address (host:port, comma-separated for a cluster, or redis:// URL); default $REDIS_URL, else a spawned redis-server, else miniredis")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

func run(addr string) error {
	ctx := context.Background()
	rs, err := devredis.Open(addr)
	if err != nil {
		return err
	}
	defer rs.Close()
	fmt.Printf("redis: %s at %s\n", rs.Kind, rs.Addr)

	db, err := openRepo()
	if err != nil {
		return err
	}
	defer db.db.Close()

	users, err := cache.New[User](rs.Client,
		cache.WithPrefix("quickstart:user:"),
		cache.WithTTL(10*time.Minute),
		cache.WithJitter(0.1),
		cache.WithNullTTL(30*time.Second),
	)
	if err != nil {
		return err
	}
	defer users.Close()
	rs.Client.Del(ctx, "quickstart:user:42", "quickstart:user:7", "quickstart:user:99999")

	step := func(what string, fn func() error) error {
		before := db.queries.Load()
		start := time.Now()
		err := fn()
		fmt.Printf("%-52s db queries +%d  (%v)\n", what, db.queries.Load()-before, time.Since(start).Round(time.Millisecond))
		return err
	}

	var u User
	if err := step("Get 42 (cold: miss, load, fill)", func() (err error) { u, err = users.Get(ctx, "42", db.FindUser); return }); err != nil {
		return err
	}
	fmt.Printf("  -> %+v\n", u)
	if err := step("Get 42 again (hit)", func() (err error) { u, err = users.Get(ctx, "42", db.FindUser); return }); err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		err := step("Get 99999 (no such row: absence cached)", func() error {
			_, err := users.Get(ctx, "99999", db.FindUser)
			if errors.Is(err, cache.ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	if err := step("100 concurrent Gets of cold key 7 (one load)", func() error {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := users.Get(ctx, "7", db.FindUser); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}); err != nil {
		return err
	}
	if err := step("Rename 42 in the DB, then Delete its entry", func() error {
		if err := db.Rename(ctx, "42", "renamed"); err != nil {
			return err
		}
		return users.Delete(ctx, "42")
	}); err != nil {
		return err
	}
	if err := step("Get 42 (reloads the new row)", func() (err error) { u, err = users.Get(ctx, "42", db.FindUser); return }); err != nil {
		return err
	}
	fmt.Printf("  -> %+v\n", u)
	st := users.Stats()
	fmt.Printf("\nstats: hits=%d null-hits=%d misses=%d loads=%d lease-waits=%d rejected-fills=%d redis-errors=%d\n",
		st.Hits, st.NullHits, st.Misses, st.Loads, st.LeaseWaits, st.RejectedFills, st.RedisErrors)
	fmt.Printf("database queries in all: %d\n", db.queries.Load())
	return nil
}
