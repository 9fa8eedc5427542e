// Command first is the smallest whole program with a cache: users read
// through Redis in front of a repository, a missing row answered without a
// second query. It needs a Redis at localhost:6379 (or -redis host:port);
// examples/quickstart is a fuller one that needs nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/cache"
)

type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// findUser is the repository method the cache wraps (a query in your
// service): cache.ErrNotFound for a row that does not exist.
func findUser(ctx context.Context, id string) (User, error) {
	if id == "42" {
		return User{ID: id, Name: "Ada"}, nil
	}
	return User{}, cache.ErrNotFound
}

func main() {
	addr := flag.String("redis", "localhost:6379", "Redis address (host:port)")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()

	users, err := cache.New(rdb, cache.Values[User]{},
		cache.WithPrefix("first:user:"), // names the cache's keys in Redis
		cache.WithTTL(10*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	defer users.Close()

	u, err := users.Get(ctx, "42", findUser) // a miss: findUser runs once
	fmt.Println(u.Name, err)
	u, err = users.Get(ctx, "42", findUser) // a hit: from Redis
	fmt.Println(u.Name, err)
	_, err = users.Get(ctx, "7", findUser) // absent: cached as absent too
	fmt.Println(errors.Is(err, cache.ErrNotFound))
	if err := users.Delete(ctx, "42"); err != nil { // after the row changed
		log.Fatal(err)
	}
}
