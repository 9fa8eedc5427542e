package binlog_test

import (
	"context"
	"log"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/consistency/binlog"
)

type User struct {
	ID   int64
	Name string
}

// Every change to shop.users, whoever makes it, deletes the cached user:
// the cache's writes go through a consistency queue (retries of failed
// deletes), the binlog position is kept in Redis, and Run tails the binlog
// until ctx ends. It needs a MySQL or MariaDB server with binlog_format=ROW,
// binlog_row_image=FULL and binlog_row_metadata=FULL, and a user with
// replication privileges, so go test compiles it without running it.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	users, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"))
	if err != nil {
		log.Fatal(err)
	}
	defer users.Close()
	q, err := consistency.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	target, err := q.Register("users", users)
	if err != nil {
		log.Fatal(err)
	}

	src, err := binlog.New(
		binlog.Config{Addr: "db:3306", User: "repl", Password: os.Getenv("REPL_PASSWORD"), ServerID: 1001},
		binlog.RedisPositions(rdb, "cacheguard:binlog:users-svc"),
		[]binlog.Rule{{Schema: "shop", Table: "users", Target: target, Keys: binlog.Column("id")}},
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := src.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
