package lock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

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

	// db stands for a *sql.DB holding the row (42, 'new', fence 0).
	db := &ordersTable{status: map[int]string{42: "new"}, fence: map[int]int64{}}

	c, err := lock.New(rdb, lock.WithLease(time.Second), lock.WithoutWatchdog())
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

	fmt.Println("row:", db.statusOf(42), "value:", rdb.HGet(ctx, "orders:{42}:status", "value").Val())
	// Output:
	// fast, SQL: <nil>
	// fast, Redis: <nil>
	// slow, SQL refused: true
	// slow, Redis refused: true
	// row: paid value: paid
}

// ordersTable is an in-memory table of orders with the one statement the
// example runs, "UPDATE orders SET status = ?, fence = ? WHERE id = ? AND
// fence < ?", so that the example needs no database driver. Any lock.Execer
// (a *sql.DB, *sql.Tx or *sql.Conn) is used the same way.
type ordersTable struct {
	mu     sync.Mutex
	status map[int]string
	fence  map[int]int64
}

func (t *ordersTable) ExecContext(_ context.Context, _ string, args ...any) (sql.Result, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("orders: want 4 arguments, got %d", len(args))
	}
	status, _ := args[0].(string)
	token, _ := args[1].(int64)
	id, _ := args[2].(int)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.status[id]; !ok || t.fence[id] >= token {
		return rowsAffected(0), nil
	}
	t.status[id], t.fence[id] = status, token
	return rowsAffected(1), nil
}

func (t *ordersTable) statusOf(id int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status[id]
}

type rowsAffected int64

func (n rowsAffected) LastInsertId() (int64, error) { return 0, errors.New("orders: no insert id") }
func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }
