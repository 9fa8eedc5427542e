package stock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Close stops a running consumer between batches: the batch in flight is
// applied and acknowledged, nothing more is read, Run returns nil, and Run,
// Pass and Close called afterwards return ErrClosed.
func TestConsumerCloseFinishesTheBatchInFlight(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 10)
	store := newSQLite(t)
	for i := 0; i < 5; i++ {
		inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
	}
	read, proceed := make(chan []string, 1), make(chan struct{})
	var c *Consumer
	c = newConsumer(t, inv, store, WithBatchSize(2), withConsumerHooks(consumerHooks{
		afterRead: func(ids []string) error {
			select {
			case read <- ids:
				<-proceed
			default:
			}
			return nil
		},
	}))
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	batch := <-read
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	for !c.life.stopping() {
		time.Sleep(time.Millisecond) // waiting for Close to mark the consumer closed
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a batch in flight", err)
	default:
	}
	close(proceed)
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := len(ordersByID(t, store, "sku")); got != len(batch) || len(batch) != 2 {
		t.Fatalf("%d orders, batch %v", got, batch)
	}
	if p, _ := rdb.XPending(ctx, inv.keys("sku", 0).outbox, "stock").Result(); p.Count != 0 {
		t.Fatalf("%d pending after close", p.Count)
	}
	if _, err := c.Pass(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("pass after close: %v", err)
	}
	if err := c.Run(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("run after close: %v", err)
	}
	if err := c.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	// The rest is drained by the next consumer.
	drain(t, newConsumer(t, inv, store))
	if got := len(ordersByID(t, store, "sku")); got != 5 {
		t.Fatalf("%d orders", got)
	}
}

// A Close whose context ends before the batch in flight is applied cancels
// it: Close returns the context's error once the pass has ended, and the
// entries not applied stay pending, taken back at once by a consumer
// started under the same name.
func TestConsumerCloseHandsBackTheBatch(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 10)
	store := newSQLite(t)
	for i := 0; i < 3; i++ {
		inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1)
	}
	started := make(chan struct{}, 1)
	hung := SinkFunc(func(ctx context.Context, ev Event) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done() // a database that never answers
		return ctx.Err()
	})
	c := newConsumer(t, inv, hung, WithConsumerName("c1"))
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	<-started
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := c.Close(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("run: %v", err)
	}
	if p, _ := rdb.XPending(ctx, inv.keys("sku", 0).outbox, "stock").Result(); p.Count != 3 {
		t.Fatalf("%d pending, want the 3 handed back", p.Count)
	}
	again := newConsumer(t, inv, store, WithConsumerName("c1"))
	if n, err := again.Pass(ctx); err != nil || n != 3 {
		t.Fatalf("restarted consumer: %d %v", n, err)
	}
}
