package cache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

type User struct {
	ID   string
	Name string
}

// findUser stands in for a repository method that queries the database.
func findUser(_ context.Context, id string) (User, error) {
	if id != "42" {
		return User{}, cache.ErrNotFound
	}
	return User{ID: id, Name: "Ada"}, nil
}

func Example() {
	mr := miniredis.NewMiniRedis() // any Redis: a *redis.Client, a cluster client...
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	users, err := cache.New(rdb, cache.Values[User]{},
		cache.WithPrefix("user:"),
		cache.WithTTL(10*time.Minute),
		cache.WithJitter(0.1),
		cache.WithNullTTL(time.Minute))
	if err != nil {
		panic(err)
	}
	defer users.Close()

	ctx := context.Background()
	u, err := users.Get(ctx, "42", findUser) // miss: loads and caches
	fmt.Println(u.Name, err)
	u, err = users.Get(ctx, "42", findUser) // hit
	fmt.Println(u.Name, err)
	_, err = users.Get(ctx, "7", findUser) // missing row, cached as an absence
	fmt.Println(errors.Is(err, cache.ErrNotFound))
	fmt.Printf("loads=%d hits=%d\n", users.Stats().Loads, users.Stats().Hits)
	// Output:
	// Ada <nil>
	// Ada <nil>
	// true
	// loads=2 hits=1
}

func ExampleCache_GetMany() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	names, _ := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("name:"))
	defer names.Close()

	// One query for all the misses, e.g. SELECT ... WHERE id IN (...).
	byIDs := func(_ context.Context, ids []string) (map[string]string, error) {
		rows := map[string]string{}
		for _, id := range ids {
			if id != "3" {
				rows[id] = "name-" + id
			}
		}
		return rows, nil
	}
	got, _ := names.GetMany(context.Background(), []string{"1", "2", "3"}, byIDs)
	fmt.Println(len(got), got["1"], got["2"])
	// Output: 2 name-1 name-2
}

func ExampleCache_Delete() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	users, _ := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"))
	defer users.Close()
	ctx := context.Background()

	users.Get(ctx, "42", findUser)
	// Write path: update the row, then delete the entry. A reader that
	// loaded the old row before this Delete cannot write it back.
	users.Delete(ctx, "42")
	fmt.Println(users.Stats().Loads)
	// Output: 1
}

func ExampleWithBloom() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	users, _ := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"), cache.WithBloom(knownIDs{"42": true}))
	defer users.Close()
	_, err := users.Get(context.Background(), "no-such-id", findUser)
	fmt.Println(errors.Is(err, cache.ErrNotFound), users.Stats().Loads, users.Stats().FilterRejects)
	// Output: true 0 1
}

// knownIDs is a toy exact filter; the bloom package has real ones.
type knownIDs map[string]bool

func (k knownIDs) MayContain(_ context.Context, key string) (bool, error) { return k[key], nil }

// Large values (here a report of many rows) are stored compressed once their
// encoded size reaches the threshold; readers decompress them transparently.
func ExampleWithCompression() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	reports, err := cache.New(rdb, cache.Values[[]string]{},
		cache.WithPrefix("report:"),
		cache.WithCompression(4<<10), // compress values of 4 KiB and more
		cache.WithMaxValueSize(8<<20))
	if err != nil {
		panic(err)
	}
	defer reports.Close()

	rows := make([]string, 2000)
	for i := range rows {
		rows[i] = fmt.Sprintf("order %d: shipped", i)
	}
	got, err := reports.Get(ctx, "daily", func(context.Context, string) ([]string, error) { return rows, nil })
	stored, _ := rdb.StrLen(ctx, "report:daily").Result() // about 44 KB of JSON
	fmt.Println(len(got), err, stored < 20_000)
	// Output:
	// 2000 <nil> true
}
