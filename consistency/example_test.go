package consistency_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/redis/go-redis/v9"
)

// repo stands in for a table of user names.
type repo struct {
	mu   sync.Mutex
	rows map[string]string
}

func (r *repo) find(_ context.Context, id string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.rows[id]
	if !ok {
		return "", cache.ErrNotFound
	}
	return name, nil
}

func (r *repo) rename(_ context.Context, id, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows[id] = name
	return nil
}

func Example() {
	mr := miniredis.NewMiniRedis() // any Redis: a *redis.Client, a cluster client...
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	db := &repo{rows: map[string]string{"42": "Ada"}}

	names, _ := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("user:"))
	defer names.Close()
	q, err := consistency.New(rdb, consistency.WithDelay(300*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer q.Close()
	users, _ := q.Register("users", names) // the same name in every instance

	ctx := context.Background()
	name, _ := names.Get(ctx, "42", db.find)
	fmt.Println(name)

	// Delete, write, and delete again 300 ms later (recorded in Redis first,
	// so another instance does it if this one dies).
	err = users.Update(ctx, []string{"42"}, func(ctx context.Context) error {
		return db.rename(ctx, "42", "Ada Lovelace")
	})
	name, _ = names.Get(ctx, "42", db.find)
	fmt.Println(name, err)
	// Output:
	// Ada
	// Ada Lovelace <nil>
}
