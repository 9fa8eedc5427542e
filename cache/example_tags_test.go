package cache_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

type Member struct {
	ID, Org, Name string
}

func ExampleValues_tags() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	// Every member is tagged with its organisation.
	members, err := cache.New(rdb, cache.Values[Member]{Tags: func(_ string, m Member) []string { return []string{"org:" + m.Org} }},
		cache.WithPrefix("member:"))
	if err != nil {
		panic(err)
	}
	defer members.Close()

	names := map[string]string{"1": "Ada", "2": "Grace"}
	load := func(_ context.Context, id string) (Member, error) {
		return Member{ID: id, Org: "acme", Name: names[id]}, nil
	}
	ctx := context.Background()
	members.Get(ctx, "1", load)
	members.Get(ctx, "2", load)

	// The organisation is renamed: every member of it is a miss from now
	// on, on every instance, without knowing their keys.
	names["1"], names["2"] = "Ada L.", "Grace H."
	if err := members.InvalidateTags(ctx, "org:acme"); err != nil {
		panic(err)
	}
	m1, _ := members.Get(ctx, "1", load)
	m2, _ := members.Get(ctx, "2", load)
	fmt.Println(m1.Name, m2.Name, members.Stats().TagMisses)
	// Output:
	// Ada L. Grace H. 2
}
