package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/lock"
)

// The main path: take a Mutex, work under the handle's context (cancelled if
// the lease is lost), release it. Another process asking meanwhile is told
// the lock is not obtained.
func Example() {
	ctx := context.Background()
	mr, err := miniredis.Run() // any Redis; an in-process one keeps the example self-contained
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	c, err := lock.New(rdb) // renewable 30 s leases by default
	if err != nil {
		panic(err)
	}
	defer c.Close()
	other, err := lock.New(rdb) // another process
	if err != nil {
		panic(err)
	}
	defer other.Close()

	h, err := c.Mutex("report:daily").Lock(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("held")

	_, err = other.Mutex("report:daily").TryLock(ctx)
	fmt.Println("other:", errors.Is(err, lock.ErrNotObtained))

	// Work under h.Context(): it ends if the lease is lost.
	if err := h.Unlock(ctx); err != nil {
		panic(err)
	}
	h2, err := other.Mutex("report:daily").TryLock(ctx)
	fmt.Println("other after unlock:", err, "with a larger fencing token:", h2.Token() > h.Token())
	_ = h2.Unlock(ctx)
	// Output:
	// held
	// other: true
	// other after unlock: <nil> with a larger fencing token: true
}

// A Semaphore lets up to size holders in at once; a holder may take several
// permits.
func ExampleClient_Semaphore() {
	ctx := context.Background()
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	c, err := lock.New(rdb)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	exports := c.Semaphore("exports", 3) // three permits, shared by every process

	a, err := exports.Acquire(ctx, 2)
	if err != nil {
		panic(err)
	}
	b, err := exports.TryAcquire(ctx, 1)
	fmt.Println("third permit:", err)
	_, err = exports.TryAcquire(ctx, 1)
	fmt.Println("fourth permit:", errors.Is(err, lock.ErrNotObtained))

	_ = a.Unlock(ctx)
	_ = b.Unlock(ctx)
	// Output:
	// third permit: <nil>
	// fourth permit: true
}
