package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

type inspectOptions struct {
	addr     string
	json     bool
	maxKeys  int64         // per node
	count    int64         // SCAN COUNT hint
	top      int           // biggest keys listed
	burst    int64         // entries expiring in one second that trigger the warning
	bigKey   int64         // bytes from which a key is called big
	maxLease time.Duration // placeholders living longer are stranded
	timeout  time.Duration
	progress bool
}

func inspectMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o inspectOptions
	fs.StringVar(&o.addr, "addr", os.Getenv("REDIS_URL"), "Redis address host:port, comma-separated cluster nodes, or a redis:// URL (default $REDIS_URL)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.Int64Var(&o.maxKeys, "max-keys", 1_000_000, "stop scanning a node after this many keys")
	fs.Int64Var(&o.count, "count", 500, "SCAN COUNT hint: keys examined per round trip")
	fs.IntVar(&o.top, "top", 10, "how many of the biggest keys to list")
	fs.Int64Var(&o.burst, "burst", 100, "warn when this many cache entries expire within one second")
	bigKey := fs.Int64("big", 1<<20, "bytes from which a key is reported as big")
	fs.DurationVar(&o.maxLease, "max-lease", time.Minute, "a lease placeholder with a longer TTL (or none) is stranded")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole scan")
	fs.BoolVar(&o.progress, "progress", true, "show a progress line on stderr during long scans")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: cacheguard inspect -addr host:port [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.bigKey = *bigKey
	if o.addr == "" || fs.NArg() > 0 || o.maxKeys <= 0 || o.count <= 0 || o.top < 0 || o.burst <= 0 || o.maxLease <= 0 || o.timeout <= 0 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rep, err := inspect(ctx, o, progressWriter(o.progress, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "cacheguard inspect: %v\n", err)
		return 1
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "cacheguard inspect: %v\n", err)
			return 1
		}
		return 0
	}
	printReport(stdout, rep)
	return 0
}

func progressWriter(on bool, w io.Writer) io.Writer {
	if !on {
		return nil
	}
	return w
}

// inspect connects to opts.addr and scans every master.
func inspect(ctx context.Context, opts inspectOptions, progress io.Writer) (*Report, error) {
	nodes, closeAll, err := connect(ctx, opts.addr)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	s := newScanner(opts, progress)
	s.nodes = len(nodes)
	for _, c := range nodes {
		if err := s.scanNode(ctx, c); err != nil {
			return nil, err
		}
	}
	return s.finish(), nil
}

// connect returns one client per master: the node itself, or every master of
// the cluster it belongs to.
func connect(ctx context.Context, addr string) ([]*redis.Client, func(), error) {
	opts := &redis.Options{MaxRetries: 1, DialerRetries: 1, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, ContextTimeoutEnabled: true}
	addrs := strings.Split(addr, ",")
	if strings.Contains(addr, "://") {
		u, err := redis.ParseURL(addr)
		if err != nil {
			return nil, nil, err
		}
		opts, addrs = u, []string{u.Addr}
		opts.ContextTimeoutEnabled = true
	}
	first := *opts
	first.Addr = addrs[0]
	c := redis.NewClient(&first)
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil && isConnError(err) {
		c.Close()
		return nil, nil, fmt.Errorf("%s: %w", addrs[0], err)
	}
	// A server that refuses INFO cluster (an emulator, a proxy) is taken
	// for a single node.
	if !strings.Contains(info, "cluster_enabled:1") {
		if len(addrs) > 1 {
			c.Close()
			return nil, nil, fmt.Errorf("%s is not a cluster node, but several addresses were given", addrs[0])
		}
		return []*redis.Client{c}, func() { c.Close() }, nil
	}
	c.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLSConfig,
		MaxRetries: 1, DialerRetries: 1, DialTimeout: opts.DialTimeout, ReadTimeout: opts.ReadTimeout, ContextTimeoutEnabled: true,
	})
	var mu sync.Mutex
	var masters []*redis.Client
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		masters = append(masters, m)
		mu.Unlock()
		return nil
	})
	if err != nil {
		cc.Close()
		return nil, nil, err
	}
	return masters, func() { cc.Close() }, nil
}
