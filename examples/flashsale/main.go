// Command flashsale sells 100 units to 10,000 buyers through package stock,
// on the embedded Redis (a spawned redis-server, else miniredis) or the one
// named by -addr / REDIS_URL, with an embedded SQLite database behind the
// outbox. Some buyers retry with the same request id, some try again with a
// new one, some never pay; the outbox consumer is killed and replaced
// mid-sale. It prints the checks and exits 1 if any fails.
//
//	go run ./examples/flashsale
//	go run ./examples/flashsale -buyers 50000 -stock 500 -buckets 4
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	cfg := defaultConfig()
	addr := flag.String("addr", "", "Redis address (comma-separated for a cluster); default: $REDIS_URL, else an embedded server")
	flag.IntVar(&cfg.Buyers, "buyers", cfg.Buyers, "buyers in the first wave")
	flag.Int64Var(&cfg.Stock, "stock", cfg.Stock, "units on sale")
	flag.IntVar(&cfg.Buckets, "buckets", cfg.Buckets, "buckets the stock is spread over")
	flag.DurationVar(&cfg.Hold, "hold", cfg.Hold, "how long a reservation waits for payment")
	flag.Parse()
	redis.SetLogger(quietLogger{})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	failed, err := run(ctx, cfg, *addr, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flashsale:", err)
		os.Exit(2)
	}
	fmt.Printf("\ndone in %v\n", time.Since(start).Round(time.Millisecond))
	if failed > 0 {
		fmt.Printf("%d check(s) FAILED\n", failed)
		os.Exit(1)
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
