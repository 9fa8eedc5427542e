// A cache whose Values take its value type: it compiles.
package main

import (
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

type user struct{ Org string }

func main() {
	_, _ = cache.New(redis.NewClient(&redis.Options{}), cache.Values[user]{
		Tags: func(_ string, u user) []string { return []string{u.Org} },
		TTL:  func(string, user) time.Duration { return time.Minute },
	}, cache.WithPrefix("user:"))
}
