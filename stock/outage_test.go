package stock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// errDBDown is what a sink returns while its database is unreachable.
var errDBDown = errors.New("database unreachable")

// outageSink applies to store until it has applied okBefore events, then
// fails every event until up is called.
type outageSink struct {
	store    *SQLStore
	okBefore int64
	applied  atomic.Int64
	down     atomic.Bool
	upped    atomic.Bool
	failures atomic.Int64
	wentDown chan struct{}
	once     sync.Once
}

func newOutageSink(store *SQLStore, okBefore int64) *outageSink {
	return &outageSink{store: store, okBefore: okBefore, wentDown: make(chan struct{})}
}

func (s *outageSink) Apply(ctx context.Context, ev Event) error {
	if !s.upped.Load() && s.applied.Load() >= s.okBefore {
		s.once.Do(func() { s.down.Store(true); close(s.wentDown) })
	}
	if s.down.Load() {
		s.failures.Add(1)
		return errDBDown
	}
	if err := s.store.Apply(ctx, ev); err != nil {
		return err
	}
	s.applied.Add(1)
	return nil
}

func (s *outageSink) up() { s.upped.Store(true); s.down.Store(false) }

// A database that goes away while entries are in flight dead-letters none
// of them, whatever WithClaimIdle: every entry fails, none fails while
// others succeed. With the sink counted healthy for a second after its last
// success, entries retried every pass (ClaimIdle 0) or every 100 ms reached
// MaxDeliveries before the outage was recognised: 20 of 30 were
// dead-lettered and the order table ended with 10 rows.
func TestDatabaseOutageDeadLettersNothing(t *testing.T) {
	rdb := sharedSingle(t)
	for _, idle := range []time.Duration{0, 100 * time.Millisecond, 2 * time.Second} {
		t.Run(fmt.Sprintf("claimIdle=%v", idle), func(t *testing.T) {
			ctx := context.Background()
			inv := newInv(t, rdb)
			load(t, inv, "sku", 100)
			store := newSQLite(t)
			store.SetStock(ctx, "sku", 100)
			for i := 0; i < 30; i++ {
				if _, err := inv.Reserve(ctx, "sku", "u"+itoa(i), "r"+itoa(i), 1); err != nil {
					t.Fatal(err)
				}
			}
			sink := newOutageSink(store, 10)
			c := newConsumer(t, inv, sink, WithClaimIdle(idle), WithPollInterval(10*time.Millisecond))
			runCtx, stop := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- c.Run(runCtx) }()
			<-sink.wentDown
			// The outage lasts long enough for every failed entry to be
			// retried several times, more than MaxDeliveries (5) at the
			// shorter claim idles.
			outage := max(time.Second, 2*idle+500*time.Millisecond)
			time.Sleep(outage)
			sink.up()
			for {
				rep, err := inv.Reconcile(ctx, "sku", store, "")
				if err != nil {
					t.Fatal(err)
				}
				if rep.Pending == 0 {
					break
				}
				if c.Stats().DeadLettered > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond) // waiting for the consumer's passes
			}
			stop()
			<-ran
			s := c.Stats()
			rows := len(ordersByID(t, store, "sku"))
			if s.DeadLettered != 0 || rows != 30 {
				t.Fatalf("after a %v outage (%d failed applies): %d rows, stats %+v", outage, sink.failures.Load(), rows, s)
			}
		})
	}
}

// MaxDeliveries counts the sink's failures of an entry, not how often Redis
// delivered it: an entry delivered five times to consumers that crashed
// before applying it, then failing once while the sink accepts the others
// (a transient error), stays pending and is applied on the next pass.
func TestCrashDeliveriesDoNotCountTowardsDeadLetter(t *testing.T) {
	rdb := sharedSingle(t)
	ctx := context.Background()
	inv := newInv(t, rdb)
	load(t, inv, "sku", 5)
	store := newSQLite(t)
	for _, id := range []string{"g1", "flaky", "g2"} {
		inv.Reserve(ctx, "sku", "u-"+id, id, 1)
	}
	for i := 0; i < 5; i++ {
		dying := newConsumer(t, inv, store, WithConsumerName("dying"+itoa(i)), WithClaimIdle(0), withConsumerHooks(consumerHooks{
			afterRead: func([]string) error { return errCrash },
		}))
		if _, err := dying.Pass(ctx); !errors.Is(err, errCrash) {
			t.Fatalf("pass %d: %v", i, err)
		}
	}
	failedOnce := false
	sink := SinkFunc(func(ctx context.Context, ev Event) error {
		if ev.RequestID == "flaky" && !failedOnce {
			failedOnce = true
			return errors.New("deadlock found; try restarting the transaction")
		}
		return store.Apply(ctx, ev)
	})
	c := newConsumer(t, inv, sink, WithClaimIdle(0), WithMaxDeliveries(5))
	for i := 0; i < 3; i++ {
		c.Pass(ctx)
	}
	if s := c.Stats(); s.DeadLettered != 0 || s.Applied != 3 || !failedOnce {
		t.Fatalf("stats %+v", s)
	}
	if n := len(ordersByID(t, store, "sku")); n != 3 {
		t.Fatalf("%d orders", n)
	}
}
