package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/lock"
	"github.com/cacheguard/cacheguard/stock"
	"github.com/redis/go-redis/v9"
)

// A flash sale: b.N purchase attempts by saleWorkers goroutines against
// b.N/2 units, one unit per user, with three users in four trying twice.
// Every implementation writes an order entry (XADD) for each sale, as the
// outbox does, and enforces the per-user limit the way users write it.
//
// Reported: sales/s (successful purchases per second of wall time),
// rt/attempt (Redis commands per attempt, pipelined ones counted one each),
// p99-ms (latency of one attempt), oversold (units sold beyond the stock)
// and dup-users (users who got more than their one unit).
const saleWorkers = 64

type saleImpl struct {
	name string
	// setup loads stock units under prefix and returns the purchase call.
	setup func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(ctx context.Context, user, req string) (bool, error)
}

func saleImpls(buckets int) []saleImpl {
	return []saleImpl{
		{fmt.Sprintf("cacheguard-stock-b%d", buckets), func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(context.Context, string, string) (bool, error) {
			inv, err := stock.New(rdb, stock.WithPrefix(prefix+":"), stock.WithBuckets(buckets), stock.WithLogger(quietLog))
			if err != nil {
				b.Fatal(err)
			}
			if err := inv.Load(context.Background(), "sku", int64(units), stock.Window{}); err != nil {
				b.Fatal(err)
			}
			return func(ctx context.Context, user, req string) (bool, error) {
				r, err := inv.Reserve(ctx, "sku", user, req, 1)
				return err == nil && r.Outcome == stock.Reserved && !r.Duplicate, err
			}
		}},
		// GET, then DECR if positive: the check and the change are apart.
		{"naive-get-decr", func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(context.Context, string, string) (bool, error) {
			k := naiveKeys(b, rdb, prefix, units)
			return func(ctx context.Context, user, req string) (bool, error) {
				n, err := rdb.Get(ctx, k.stock).Int()
				if err != nil || n <= 0 {
					return false, err
				}
				if rdb.SIsMember(ctx, k.users, user).Val() {
					return false, nil
				}
				rdb.Decr(ctx, k.stock)
				rdb.SAdd(ctx, k.users, user)
				return true, rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.orders, Values: []any{"user", user, "req", req}}).Err()
			}
		}},
		// DECR, and INCR back when it went below zero.
		{"naive-decr-compensate", func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(context.Context, string, string) (bool, error) {
			k := naiveKeys(b, rdb, prefix, units)
			return func(ctx context.Context, user, req string) (bool, error) {
				if rdb.SIsMember(ctx, k.users, user).Val() {
					return false, nil
				}
				n, err := rdb.Decr(ctx, k.stock).Result()
				if err != nil {
					return false, err
				}
				if n < 0 {
					return false, rdb.Incr(ctx, k.stock).Err()
				}
				rdb.SAdd(ctx, k.users, user)
				return true, rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.orders, Values: []any{"user", user, "req", req}}).Err()
			}
		}},
		// WATCH the stock and the buyers, MULTI/EXEC, retry on conflict.
		{"naive-watch-multi", func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(context.Context, string, string) (bool, error) {
			k := naiveKeys(b, rdb, prefix, units)
			return func(ctx context.Context, user, req string) (bool, error) {
				for {
					ok := false
					err := rdb.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, k.stock).Int()
						if err != nil || n <= 0 || tx.SIsMember(ctx, k.users, user).Val() {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Decr(ctx, k.stock)
							p.SAdd(ctx, k.users, user)
							p.XAdd(ctx, &redis.XAddArgs{Stream: k.orders, Values: []any{"user", user, "req", req}})
							return nil
						})
						ok = err == nil
						return err
					}, k.stock, k.users)
					if errors.Is(err, redis.TxFailedErr) {
						continue
					}
					return ok, err
				}
			}
		}},
		// One distributed lock (package lock) around GET, DECR, SADD, XADD.
		{"naive-lock-per-purchase", func(b *testing.B, rdb redis.UniversalClient, prefix string, units int) func(context.Context, string, string) (bool, error) {
			k := naiveKeys(b, rdb, prefix, units)
			lc, err := lock.New(rdb)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { lc.Close() })
			m := lc.Mutex(prefix + ":lock")
			return func(ctx context.Context, user, req string) (bool, error) {
				h, err := m.Lock(ctx)
				if err != nil {
					return false, err
				}
				defer h.Unlock(ctx)
				n, err := rdb.Get(ctx, k.stock).Int()
				if err != nil || n <= 0 || rdb.SIsMember(ctx, k.users, user).Val() {
					return false, err
				}
				rdb.Decr(ctx, k.stock)
				rdb.SAdd(ctx, k.users, user)
				return true, rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.orders, Values: []any{"user", user, "req", req}}).Err()
			}
		}},
	}
}

type naiveSaleKeys struct{ stock, users, orders string }

func naiveKeys(b *testing.B, rdb redis.UniversalClient, prefix string, units int) naiveSaleKeys {
	t := "{" + prefix + "}"
	k := naiveSaleKeys{t + ":stock", t + ":users", t + ":orders"}
	if err := rdb.Set(context.Background(), k.stock, units, 0).Err(); err != nil {
		b.Fatal(err)
	}
	return k
}

var saleRun atomic.Int64

func runSale(b *testing.B, rdb redis.UniversalClient, calls *atomic.Int64, impl saleImpl) {
	units := max(1, b.N/2)
	prefix := fmt.Sprintf("sale%d-%d", os.Getpid(), saleRun.Add(1))
	buy := impl.setup(b, rdb, prefix, units)
	users := max(1, b.N*3/4)
	lat := make([]time.Duration, b.N)
	won := make([]string, b.N)
	var next atomic.Int64
	var errs atomic.Int64
	ctx := context.Background()
	calls.Store(0)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < saleWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				user := "u" + strconv.Itoa(i%users)
				t0 := time.Now()
				ok, err := buy(ctx, user, "r"+strconv.Itoa(i))
				lat[i] = time.Since(t0)
				if err != nil {
					errs.Add(1)
				}
				if ok {
					won[i] = user
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	sold := 0
	per := map[string]int{}
	dups := 0
	for _, u := range won {
		if u != "" {
			sold++
			per[u]++
			if per[u] == 2 {
				dups++
			}
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(sold)/elapsed.Seconds(), "sales/s")
	b.ReportMetric(float64(calls.Load())/float64(b.N), "rt/attempt")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(max(0, sold-units)), "oversold")
	b.ReportMetric(float64(dups), "dup-users")
	if e := errs.Load(); e > 0 {
		b.Logf("%s: %d errors", impl.name, e)
	}
}

// BenchmarkFlashSale runs every implementation on the shared single node.
func BenchmarkFlashSale(b *testing.B) {
	var calls atomic.Int64
	rdb := newClient(b)
	rdb.AddHook(callCounter{&calls})
	for _, impl := range saleImpls(1) {
		b.Run(impl.name, func(b *testing.B) { runSale(b, rdb, &calls, impl) })
	}
}

// BenchmarkFlashSaleCluster runs them on a three-master cluster; the stock
// package also with the SKU over 4 and 8 buckets (the naive ones keep one
// key, so one master takes all of a SKU's traffic).
func BenchmarkFlashSaleCluster(b *testing.B) {
	addrs := startBenchCluster(b)
	var calls atomic.Int64
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	b.Cleanup(func() { rdb.Close() })
	rdb.AddHook(callCounter{&calls})
	impls := saleImpls(1)
	impls = append(impls, saleImpls(4)[0], saleImpls(8)[0])
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) { runSale(b, rdb, &calls, impl) })
	}
}

// startBenchCluster starts three cluster-enabled servers for this benchmark
// and stops them with it.
func startBenchCluster(b *testing.B) []string {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("redis-server not on PATH")
	}
	var addrs []string
	for i := 0; i < 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		dir := b.TempDir()
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for c.Ping(ctx).Err() != nil && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		lo, hi := i*16384/3, (i+1)*16384/3-1
		err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			host, port, _ := net.SplitHostPort(addrs[0])
			err = c.Do(ctx, "CLUSTER", "MEET", host, port).Err()
		}
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, _ := c.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if ctx.Err() != nil {
				b.Fatal("cluster never formed")
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return addrs
}
