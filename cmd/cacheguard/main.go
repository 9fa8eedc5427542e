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
