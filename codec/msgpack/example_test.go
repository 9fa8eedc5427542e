package msgpack_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/codec/msgpack"
)

type User struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// A cache whose entries are MessagePack: the only change is WithCodec, with a
// prefix of its own (entries written by one codec do not decode with another).
func Example() {
	mr := miniredis.NewMiniRedis() // any Redis
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	users, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:mp:"), cache.WithCodec(msgpack.Codec{}))
	if err != nil {
		panic(err)
	}
	defer users.Close()
	ctx := context.Background()
	load := func(context.Context, string) (User, error) { return User{ID: 42, Name: "Ada"}, nil }
	u, err := users.Get(ctx, "42", load) // miss: loaded, stored as MessagePack
	fmt.Println(u.Name, err)
	u, err = users.Get(ctx, "42", load) // hit: decoded from MessagePack
	fmt.Println(u.ID, u.Name, err)

	// The codec alone: json tags name the fields.
	b, _ := msgpack.Codec{}.Marshal(User{ID: 7, Name: "Grace"})
	var m map[string]any
	fmt.Println(msgpack.Codec{}.Unmarshal(b, &m), m["name"])
	// Output:
	// Ada <nil>
	// 42 Ada <nil>
	// <nil> Grace
}
