package stock

import (
	"context"
	"flag"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// soakFor is how long TestSoak sells: 30 s by default (every go test run,
// CI's included); -stock.soak=10m for the long run.
var soakFor = flag.Duration("stock.soak", 30*time.Second, "how long TestSoak sells")

// pausableSink is a database that can be paused: while paused, Apply waits
// until it is resumed or its context ends (the consumer's timeout, WithTimeout).
type pausableSink struct {
	store *SQLStore
	mu    sync.Mutex
	gate  chan struct{} // closed while the database runs
}

func newPausableSink(store *SQLStore) *pausableSink {
	g := make(chan struct{})
	close(g)
	return &pausableSink{store: store, gate: g}
}

func (s *pausableSink) pause() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *pausableSink) resume() {
	s.mu.Lock()
	select {
	case <-s.gate:
	default:
		close(s.gate)
	}
	s.mu.Unlock()
}

func (s *pausableSink) Apply(ctx context.Context, ev Event) error {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	select {
	case <-g:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.store.Apply(ctx, ev)
}

// soakConsumer is one consumer process: crash makes it stop acknowledging
// at its next read, as a process dying mid-batch does.
type soakConsumer struct {
	c     *Consumer
	crash atomic.Bool
	stop  context.CancelFunc
	done  chan struct{}
}

// Sales, returns and expiring holds on a cluster for soakFor, while
// consumers are killed (mid-batch, or closed) and the database is paused at
// random: every reservation answered ends in the database once, nothing is
// dead-lettered, nothing is oversold, and Reconcile is clean after the
// drain.
func TestSoak(t *testing.T) {
	rdb := redistest.SharedCluster(t)
	ctx := context.Background()
	const stock = 100 // short enough that it sells out and comes back
	inv := newInv(t, rdb, WithBuckets(3), WithPerUserLimit(2), WithHoldFor(400*time.Millisecond), WithLocalSoldOut(0))
	load(t, inv, "sku", stock)
	store := newSQLite(t)
	store.SetStock(ctx, "sku", stock)
	sink := newPausableSink(store)

	var mu sync.Mutex
	var consumers []*soakConsumer
	var stats []func() ConsumerStats
	start := func() *soakConsumer {
		sc := &soakConsumer{done: make(chan struct{})}
		sc.c = newConsumer(t, inv, sink, WithClaimIdle(time.Second), WithTimeout(time.Second),
			WithPollInterval(20*time.Millisecond), withConsumerHooks(consumerHooks{
				afterRead: func([]string) error {
					if sc.crash.Load() {
						return errCrash
					}
					return nil
				},
			}))
		var runCtx context.Context
		runCtx, sc.stop = context.WithCancel(ctx)
		go func() { defer close(sc.done); sc.c.Run(runCtx) }()
		mu.Lock()
		stats = append(stats, sc.c.Stats)
		mu.Unlock()
		return sc
	}
	consumers = []*soakConsumer{start(), start()}

	sale, endSale := context.WithTimeout(ctx, *soakFor)
	defer endSale()
	var chaos sync.WaitGroup
	var kills, closes, pauses atomic.Int64
	chaos.Add(2)
	go func() { // consumers die and are replaced
		defer chaos.Done()
		for sleepRand(sale, time.Second, 3*time.Second) {
			i := rand.IntN(len(consumers))
			old := consumers[i]
			if rand.IntN(3) == 0 {
				cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				old.c.Close(cctx)
				cancel()
				closes.Add(1)
			} else {
				old.crash.Store(true)
				kills.Add(1)
			}
			old.stop()
			<-old.done
			consumers[i] = start()
		}
	}()
	var worst atomic.Int64 // the most units ever held beyond the stock
	chaos.Add(1)
	go func() { // units held never exceed the stock, at any moment
		defer chaos.Done()
		for sleepRand(sale, 50*time.Millisecond, 150*time.Millisecond) {
			st, err := inv.Status(ctx, "sku")
			if err != nil {
				t.Errorf("status: %v", err)
				return
			}
			if over := st.Reserved + st.Sold - stock; over > worst.Load() {
				worst.Store(over)
			}
			if st.Remaining+st.Reserved+st.Sold+st.InFlight != stock {
				t.Errorf("units do not add up: %+v", st)
			}
		}
	}()
	go func() { // the database pauses
		defer chaos.Done()
		for sleepRand(sale, 2*time.Second, 5*time.Second) {
			sink.pause()
			pauses.Add(1)
			sleepRand(sale, 500*time.Millisecond, 3*time.Second)
			sink.resume()
		}
	}()

	var ordersIn, soldOut, released, confirmed atomic.Int64
	var buyers sync.WaitGroup
	var seq atomic.Int64
	// Eight buyers at a pace the consumers keep up with (SQLite in pure Go,
	// under -race, applies about a hundred entries a second here): the
	// backlog stays bounded, so the drain at the end is short.
	for g := 0; g < 8; g++ {
		buyers.Add(1)
		go func() {
			defer buyers.Done()
			var paid []string // this buyer's confirmed orders, some refunded later
			for sleepRand(sale, 100*time.Millisecond, 300*time.Millisecond) {
				if len(paid) > 0 && rand.IntN(3) == 0 { // a refund keeps units coming back
					i := rand.IntN(len(paid))
					if _, err := inv.Release(ctx, "sku", paid[i]); err == nil {
						released.Add(1)
					}
					paid[i] = paid[len(paid)-1]
					paid = paid[:len(paid)-1]
				}
				n := seq.Add(1)
				rid, user := "r"+itoa(int(n)), "u"+itoa(rand.IntN(3000))
				res, err := inv.Reserve(ctx, "sku", user, rid, 1)
				if err != nil {
					t.Errorf("reserve: %v", err)
					return
				}
				switch res.Outcome {
				case Reserved:
					ordersIn.Add(1)
				case SoldOut:
					soldOut.Add(1)
					continue
				default:
					continue
				}
				switch rand.IntN(5) {
				case 0, 1: // paid
					if _, err := inv.Confirm(ctx, "sku", rid); err == nil {
						confirmed.Add(1)
						paid = append(paid, rid)
					}
				case 2: // cancelled
					if _, err := inv.Release(ctx, "sku", rid); err == nil {
						released.Add(1)
					}
				default: // never paid: the hold expires
				}
			}
		}()
	}
	buyers.Wait()
	chaos.Wait()
	ended := time.Now()
	sink.resume()
	for _, sc := range consumers {
		sc.crash.Store(false)
	}
	// Every hold runs out and the consumers drain everything.
	for deadline := time.Now().Add(time.Minute); mustStatus(t, inv, "sku").Reserved > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("holds never expired: %+v", mustStatus(t, inv, "sku"))
		}
		time.Sleep(50 * time.Millisecond) // waiting for the holds' due time and the consumers' expiries
	}
	rep := waitDrained(t, inv, store, "sku")
	for _, sc := range consumers {
		sc.stop()
		<-sc.done
	}
	var dead, expired, failed int64
	mu.Lock()
	for _, s := range stats {
		st := s()
		dead += st.DeadLettered
		expired += st.Expired
		failed += st.Failed
	}
	mu.Unlock()
	deadStream, err := rdb.XLen(ctx, deadKey(inv.cfg.ns)).Result()
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(len(ordersByID(t, store, "sku")))
	t.Logf("soak %v: orders in %d, orders in the database %d, dead letters %d (stream %d), oversold %d (worst during the sale %d); "+
		"confirmed %d, released %d, expired %d, sold-out answers %d, sink failures %d; consumers killed %d, closed %d; database paused %d times; drained in %v; %v",
		*soakFor, ordersIn.Load(), rows, dead, deadStream, rep.Oversold, worst.Load(), confirmed.Load(), released.Load(), expired,
		soldOut.Load(), failed, kills.Load(), closes.Load(), pauses.Load(), time.Since(ended).Round(time.Millisecond), rep)
	if rows != ordersIn.Load() || dead != 0 || deadStream != 0 || !rep.Clean() || rep.DBActive > stock || worst.Load() > 0 {
		t.Fatalf("soak failed: %d orders in, %d rows, %d dead letters; %v", ordersIn.Load(), rows, dead, rep)
	}
}

// sleepRand sleeps a random time between lo and hi; false if ctx ended.
func sleepRand(ctx context.Context, lo, hi time.Duration) bool {
	t := time.NewTimer(lo + rand.N(hi-lo))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
