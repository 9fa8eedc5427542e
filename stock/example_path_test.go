package stock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/cacheguard/cacheguard/stock"
)

// A reservation reaches the database through the outbox: the consumer reads
// it from Redis, applies it to the orders table (here SQLite) and
// acknowledges it. A service runs Consumer.Run in the background; Pass is one
// round of it.
func ExampleNewConsumer() {
	ctx := context.Background()
	mr, err := miniredis.Run() // any Redis
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1) // one in-memory database
	defer db.Close()

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	inv, err := stock.New(rdb, stock.WithLogger(quiet))
	if err != nil {
		panic(err)
	}
	store := stock.NewSQLStore(db, "")
	if err := store.CreateTables(ctx); err != nil {
		panic(err)
	}
	if err := inv.Load(ctx, "sku-1", 5, stock.Window{Start: time.Now().Add(-time.Minute)}); err != nil {
		panic(err)
	}
	r, err := inv.Reserve(ctx, "sku-1", "ann", "order-1", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("ann:", r.Outcome)

	c, err := stock.NewConsumer(inv, store, stock.WithLogger(quiet), stock.WithBatchSize(50))
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	n, err := c.Pass(ctx)
	fmt.Println("applied:", n, err)
	orders, err := store.Orders(ctx, "sku-1")
	if err != nil {
		panic(err)
	}
	for _, o := range orders {
		fmt.Println(o.RequestID, o.User, o.Qty, o.State)
	}
	// Output:
	// ann: reserved
	// applied: 1 <nil>
	// order-1 ann 1 reserved
}

// An Admission in front of Reserve keeps a flood away from the sale's keys:
// here one request per user per hour and SKU, shared by every process.
func ExampleNewAdmission() {
	ctx := context.Background()
	mr, err := miniredis.Run() // any Redis
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	gate, err := stock.NewAdmission(rdb,
		stock.WithUserRate(stock.Rate{Count: 1, Per: time.Hour}),
		stock.WithSKURate(stock.Rate{Count: 1000, Per: time.Second}),
		stock.WithInstances(8), // each process's share while Redis fails
	)
	if err != nil {
		panic(err)
	}
	for _, user := range []string{"ann", "ann", "bob"} {
		err := gate.Allow(ctx, "sku-1", user)
		fmt.Println(user, err == nil, errors.Is(err, stock.ErrRateLimited))
	}
	// Output:
	// ann true false
	// ann false true
	// bob true false
}
