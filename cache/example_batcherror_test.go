package cache_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

func ExampleBatchError() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	names, _ := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("name:"))
	defer names.Close()
	ctx := context.Background()
	names.Set(ctx, "1", "name-1")

	// The database fails for the misses; the cached key is still returned.
	errDB := errors.New("database unavailable")
	got, err := names.GetMany(ctx, []string{"1", "2", "3"}, func(context.Context, []string) (map[string]string, error) {
		return nil, errDB
	})
	fmt.Println(got)
	var be *cache.BatchError
	if errors.As(err, &be) {
		fmt.Println(be.Keys(), errors.Is(be.Err("2"), errDB), be.Err("1"))
	}
	fmt.Println(errors.Is(err, errDB))
	// Output:
	// map[1:name-1]
	// [2 3] true <nil>
	// true
}
