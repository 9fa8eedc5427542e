// Command cacheguard is an operator's tool for a Redis (or Redis Cluster)
// that cacheguard uses.
//
//	cacheguard inspect -addr host:port [-json] [-max-keys n] ...
//
// inspect walks the keyspace with SCAN (never KEYS), a bounded number of keys
// per node, and reports what hurts a cache in production: the key-size
// histogram and the biggest keys, the TTL histogram of cacheguard's entries
// with a warning when many of them expire in the same second (an avalanche
// waiting to happen), lease placeholders stranded without an expiry, the
// write path's retry queue depth and dead letters, the fill ratio of Bloom
// filters, and who holds locks. Every reply is parsed defensively: keys of
// other programs are counted by size and otherwise left alone.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: cacheguard <command> [flags]

commands:
  inspect   scan a Redis or Redis Cluster and report big keys, expiry
            clusters, stranded leases, queues, Bloom filters and locks

Run "cacheguard inspect -h" for its flags.
`

// run is the whole program, callable from tests: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "inspect":
		return inspectMain(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "cacheguard: unknown command %q\n\n%s", args[0], usage)
	return 2
}
