package lock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/cacheguard/cacheguard/lock"
)

// A holder that was paused past its lease cannot overwrite the work of the
// holder that came after it: the row and the Redis value both remember the
// largest token they accepted and refuse smaller ones.
func Example_fencing() {
	ctx := context.Background()
	mr, err := miniredis.Run() // any Redis; an in-process one keeps the example self-contained
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database
	db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, fence INTEGER NOT NULL DEFAULT 0)`)
	db.Exec(`INSERT INTO orders (id, status) VALUES (42, 'new')`)

	c, err := lock.New(rdb, lock.WithLease(time.Second))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// The name carries the hash tag of the data it guards ({42}), so on a
	// cluster the lock and "orders:{42}" share a slot.
	m := c.Mutex("orders:{42}")

	slow, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	mr.FastForward(2 * time.Second) // slow pauses past its lease; the lock expires

	fast, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	update := `UPDATE orders SET status = ?, fence = ? WHERE id = ? AND fence < ?`
	fmt.Println("fast, SQL:", lock.ExecFenced(ctx, db, update, "paid", fast.Token(), 42, fast.Token()))
	fmt.Println("fast, Redis:", lock.SetFenced(ctx, rdb, "orders:{42}:status", fast.Token(), "paid", 0))
	fast.Unlock(ctx)

	// slow wakes up and carries on with its stale token.
	err = lock.ExecFenced(ctx, db, update, "cancelled", slow.Token(), 42, slow.Token())
	fmt.Println("slow, SQL refused:", errors.Is(err, lock.ErrFenced))
	err = lock.SetFenced(ctx, rdb, "orders:{42}:status", slow.Token(), "cancelled", 0)
	fmt.Println("slow, Redis refused:", errors.Is(err, lock.ErrFenced))

	var status string
	db.QueryRow(`SELECT status FROM orders WHERE id = 42`).Scan(&status)
	fmt.Println("row:", status, "value:", rdb.HGet(ctx, "orders:{42}:status", "value").Val())
	// Output:
	// fast, SQL: <nil>
	// fast, Redis: <nil>
	// slow, SQL refused: true
	// slow, Redis refused: true
	// row: paid value: paid
}
