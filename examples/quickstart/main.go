// Command quickstart is a program to copy into a module of your own (it uses
// cacheguard's public API only): a cache of users in front of a database,
// with a Bloom filter shared by every instance that turns away ids that
// exist nowhere, a local tier for the hot keys, one query for a hundred
// readers of a cold key, a write through the write path (a delayed double
// delete whose second delete is recorded in Redis before the write), and
// an insert every instance sees.
//
//	go run ./examples/quickstart                       # an in-process miniredis
//	go run ./examples/quickstart -redis localhost:6379 # your Redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/hotkey"
)

type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func main() {
	addr := flag.String("redis", "", "Redis address (host:port); empty: an in-process miniredis")
	flag.Parse()
	if *addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer mr.Close()
		*addr = mr.Addr()
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()
	if err := run(context.Background(), rdb, newUserDB(1000)); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, rdb redis.UniversalClient, db *userDB) error {
	// Penetration: a filter of the ids that exist answers "absent" for the
	// others without asking Redis or the database. It is shared by every
	// instance of the service (a row added through one is found by all)
	// and read in process. Only the first instance of a fleet scans the
	// table; the others read the filter from Redis.
	ids, err := bloom.NewFleet(ctx, rdb, "quickstart:user-ids", 100_000, 0.001)
	if err != nil {
		return err
	}
	defer ids.Close()
	if !ids.Ready() {
		if err := ids.Rebuild(ctx, db.IDs()); err != nil && !errors.Is(err, bloom.ErrRebuildInProgress) {
			return err
		}
	}
	if err := ids.WaitReady(ctx); err != nil {
		return err
	}
	// Hot keys: the most read keys of the last seconds, kept in process.
	hot, err := hotkey.New()
	if err != nil {
		return err
	}
	defer hot.Close()

	users, err := cache.New(rdb, cache.Values[User]{},
		cache.WithPrefix("quickstart:user:"), // required: one prefix per cache
		cache.WithTTL(10*time.Minute),
		cache.WithJitter(0.1),          // avalanche: expiries spread ±10 %
		cache.WithNullTTL(time.Minute), // absences the filter let by, cached
		cache.WithBloom(ids),
		cache.WithLocal(64<<20), // a 64 MiB local tier...
		cache.WithHotKeys(hot),  // ...for the hot keys only
	)
	if err != nil {
		return err
	}
	defer users.Close()

	// Breakdown: a hundred readers of a cold key, one database query.
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { _, _ = users.Get(ctx, "42", db.Find) })
	}
	wg.Wait()
	fmt.Println("a hundred readers of a cold key:", db.Queries(), "query")

	_, err = users.Get(ctx, "no-such-id", db.Find)
	fmt.Println("an id that exists nowhere:", errors.Is(err, cache.ErrNotFound), "with", db.Queries(), "query in all")

	// The write path: delete, write, delete again once replicas caught up;
	// the second delete is recorded in Redis first, so another instance
	// runs it if this one dies after the write.
	q, err := consistency.New(rdb)
	if err != nil {
		return err
	}
	defer q.Close()
	target, err := q.Register("users", users)
	if err != nil {
		return err
	}
	err = target.Update(ctx, []string{"42"}, func(ctx context.Context) error {
		return db.Rename(ctx, "42", "Ada")
	})
	if err != nil {
		return err
	}
	u, err := users.Get(ctx, "42", db.Find)
	fmt.Println("after the update:", u.Name, err)

	// An insert, after its commit: Inserted adds the id to the filter and
	// deletes any absence of it cached before, for every instance.
	if err := db.Insert(ctx, "1001", "Grace"); err != nil {
		return err
	}
	if err := users.Inserted(ctx, "1001"); err != nil {
		return err
	}
	u, err = users.Get(ctx, "1001", db.Find)
	fmt.Println("a new row:", u.Name, err)
	return nil
}

// userDB stands for your repository: a table of users, every query counted.
type userDB struct {
	mu      sync.Mutex
	names   map[string]string
	queries atomic.Int64
}

func newUserDB(n int) *userDB {
	db := &userDB{names: make(map[string]string, n)}
	for i := 1; i <= n; i++ {
		db.names[fmt.Sprint(i)] = fmt.Sprintf("user-%d", i)
	}
	return db
}

// Find is a cache.Loader: it returns cache.ErrNotFound for a missing row.
func (db *userDB) Find(ctx context.Context, id string) (User, error) {
	db.queries.Add(1)
	time.Sleep(20 * time.Millisecond) // a database that takes its time
	db.mu.Lock()
	defer db.mu.Unlock()
	name, ok := db.names[id]
	if !ok {
		return User{}, fmt.Errorf("user %s: %w", id, cache.ErrNotFound)
	}
	return User{ID: id, Name: name}, nil
}

// Insert adds a row.
func (db *userDB) Insert(ctx context.Context, id, name string) error {
	return db.Rename(ctx, id, name)
}

func (db *userDB) Rename(ctx context.Context, id, name string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.names[id] = name
	return nil
}

// IDs lists every id, to fill the Bloom filter.
func (db *userDB) IDs() iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		db.mu.Lock()
		ids := make([]string, 0, len(db.names))
		for id := range db.names {
			ids = append(ids, id)
		}
		db.mu.Unlock()
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

func (db *userDB) Queries() int64 { return db.queries.Load() }
