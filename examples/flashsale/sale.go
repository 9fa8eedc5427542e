package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/devredis"
	"github.com/cacheguard/cacheguard/stock"
	_ "modernc.org/sqlite"
)

type config struct {
	Buyers  int
	Stock   int64
	Buckets int
	Hold    time.Duration
	// Retry, Second: shares of the first wave's buyers who retry a request
	// whose answer was lost, or click again later. NoPay, Cancel: shares of
	// the holds granted that are never paid for, or are cancelled.
	Retry, Second, NoPay, Cancel float64
	// KillAfter: the first consumer dies after applying this many events.
	KillAfter int64
	// ClaimIdle: how long the dead consumer's entries wait before the
	// replacement takes them.
	ClaimIdle time.Duration
}

func defaultConfig() config {
	return config{
		Buyers: 10000, Stock: 100, Buckets: 1, Hold: 2 * time.Second,
		Retry: 0.2, Second: 0.2, NoPay: 0.2, Cancel: 0.05,
		KillAfter: 40, ClaimIdle: time.Second,
	}
}

const sku = "phone-2026"

// outcome is what one buyer saw.
type outcome struct {
	user     string
	reqs     []string // request ids that reserved (first answers)
	paid     []string
	retryBad int // retries that did not return the first answer
}

// run sells the stock and returns how many checks failed.
func run(ctx context.Context, cfg config, addr string, w io.Writer) (int, error) {
	out := &lockedWriter{w: w} // the consumers' goroutines print too
	rs, err := devredis.Open(addr)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	dir, err := os.MkdirTemp("", "flashsale")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "shop.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	store := stock.NewSQLStore(db, "")
	if err := store.CreateTables(ctx); err != nil {
		return 0, err
	}
	if err := store.SetStock(ctx, sku, cfg.Stock); err != nil {
		return 0, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ns := "flashsale-" + fmt.Sprint(time.Now().UnixNano()) + ":"
	inv, err := stock.New(rs.Client, stock.WithPrefix(ns), stock.WithBuckets(cfg.Buckets),
		stock.WithHoldFor(cfg.Hold), stock.WithLocalSoldOut(20*time.Millisecond), stock.WithLogger(quiet))
	if err != nil {
		return 0, err
	}
	n, err := store.Stock(ctx, sku)
	if err != nil {
		return 0, err
	}
	if err := inv.Load(ctx, sku, n, stock.Window{}); err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "redis: %s at %s; database: SQLite; %d units of %s, %d bucket(s), hold %v\n",
		rs.Kind, rs.Addr, n, sku, cfg.Buckets, cfg.Hold)

	// The first consumer dies mid-sale: its sink fails after KillAfter
	// events and its context is cancelled, leaving entries read but not
	// acknowledged. The replacement, under another name, claims them.
	var applied atomic.Int64
	ctx1, kill := context.WithCancel(ctx)
	dying := stock.SinkFunc(func(c context.Context, ev stock.Event) error {
		if applied.Add(1) > cfg.KillAfter {
			kill()
			return errors.New("killed")
		}
		return store.Apply(c, ev)
	})
	c1, err := stock.NewConsumer(inv, dying, stock.WithConsumerName("consumer-1"), stock.WithLogger(quiet), stock.WithBatchSize(20))
	if err != nil {
		return 0, err
	}
	c2, err := stock.NewConsumer(inv, store, stock.WithConsumerName("consumer-2"), stock.WithLogger(quiet),
		stock.WithClaimIdle(cfg.ClaimIdle), stock.WithPollInterval(20*time.Millisecond))
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c1.Run(ctx1)
		fmt.Fprintf(out, "consumer-1 killed after %d events, with entries read and not acknowledged\n", cfg.KillAfter)
	}()
	ctx2, stop2 := context.WithCancel(ctx)
	defer stop2()
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx1.Done()
		fmt.Fprintf(out, "consumer-2 started\n")
		c2.Run(ctx2)
	}()

	// Wave 1.
	t0 := time.Now()
	wave1 := buyers(ctx, inv, cfg, "w1", cfg.Buyers, true)
	fmt.Fprintf(out, "wave 1: %d buyers in %v\n", cfg.Buyers, time.Since(t0).Round(time.Millisecond))
	// Unpaid holds run out, cancelled ones were released: that stock is for
	// sale again. Wave 2 buys it and everyone pays.
	if err := waitFor(ctx, 30*time.Second, func() bool {
		st, err := inv.Status(ctx, sku)
		return err == nil && st.Reserved == 0
	}); err != nil {
		return 0, fmt.Errorf("unpaid holds never expired: %w", err)
	}
	st, _ := inv.Status(ctx, sku)
	returned := st.Remaining
	fmt.Fprintf(out, "after the holds ran out: %d units back on sale\n", returned)
	w2cfg := cfg
	w2cfg.NoPay, w2cfg.Cancel, w2cfg.Second = 0, 0, 0
	// A buyer of wave 2 whose payment comes after the hold ran out (a slow
	// machine can take longer than a short hold between Reserve and
	// Confirm) puts the unit back on sale: later waves buy what is left.
	var wave2 []outcome
	for round := 0; round < 5; round++ {
		left, err := unsold(ctx, inv)
		if err != nil {
			return 0, err
		}
		if left == 0 {
			break
		}
		wave2 = append(wave2, buyers(ctx, inv, w2cfg, fmt.Sprintf("w%d", round+2), max(1000, int(left)*10), true)...)
	}

	// Let the consumer catch up, then stop it.
	if err := waitFor(ctx, 30*time.Second, func() bool {
		rep, err := inv.Reconcile(ctx, sku, store, "")
		return err == nil && rep.Pending == 0
	}); err != nil {
		return 0, fmt.Errorf("outbox never drained: %w", err)
	}
	stop2()
	kill()
	wg.Wait()
	return check(ctx, out, inv, store, cfg, append(wave1, wave2...), returned, c2.Stats())
}

// unsold waits until no unit is held (holds paid for or run out) and
// returns how many units are for sale.
func unsold(ctx context.Context, inv *stock.Inventory) (int64, error) {
	if err := waitFor(ctx, 30*time.Second, func() bool {
		st, err := inv.Status(ctx, sku)
		return err == nil && st.Reserved == 0
	}); err != nil {
		return 0, fmt.Errorf("unpaid holds never expired: %w", err)
	}
	st, err := inv.Status(ctx, sku)
	return st.Remaining, err
}

// buyers runs n buyers at once and returns what they saw.
func buyers(ctx context.Context, inv *stock.Inventory, cfg config, wave string, n int, pay bool) []outcome {
	res := make([]outcome, n)
	// Which holds go unpaid or are cancelled follows the order in which
	// holds were granted, spread evenly (a golden-ratio sequence), not a
	// coin per buyer: the shares hold for any number of units, so even a
	// small sale has holds that run out (the first hold always does).
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			o := outcome{user: fmt.Sprintf("%s-u%d", wave, i)}
			tries := 1
			if r.Float64() < cfg.Second {
				tries = 2 // clicks again later, a new request
			}
			for try := 0; try < tries; try++ {
				id := fmt.Sprintf("%s-r%d-%d", wave, i, try)
				first, err := inv.Reserve(ctx, sku, o.user, id, 1)
				if err != nil {
					continue
				}
				if r.Float64() < cfg.Retry { // the answer was lost: same id again
					for k := 0; k < 2; k++ {
						again, err := inv.Reserve(ctx, sku, o.user, id, 1)
						if err == nil && again.Local && !first.Local {
							// Sold out by this process's memory: not an
							// answer about this request; ask for it.
							again, err = inv.Lookup(ctx, sku, id)
						}
						if err == nil && !first.Local && (!again.Duplicate || again.Outcome != first.Outcome) {
							o.retryBad++
						}
					}
				}
				if first.Outcome != stock.Reserved || first.Duplicate {
					continue
				}
				o.reqs = append(o.reqs, id)
				_, p := math.Modf(float64(granted.Add(1)-1) * 0.6180339887498949)
				switch {
				case p < cfg.NoPay: // walks away; the hold runs out
				case p < cfg.NoPay+cfg.Cancel:
					inv.Release(ctx, sku, id)
				default:
					time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
					if _, err := inv.Confirm(ctx, sku, id); err == nil {
						o.paid = append(o.paid, id)
					}
				}
			}
			res[i] = o
		}()
	}
	wg.Wait()
	return res
}

func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
