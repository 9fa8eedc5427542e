// A cache of users given the tag function of another type: it must not
// compile (TestValuesOfAnotherTypeDoNotCompile).
package main

import (
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

type user struct{ Org string }

type order struct{ Shop string }

func main() {
	_, _ = cache.New[user](redis.NewClient(&redis.Options{}), cache.Values[order]{
		Tags: func(_ string, o order) []string { return []string{o.Shop} },
	}, cache.WithPrefix("user:"))
}
