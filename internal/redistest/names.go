package redistest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// OnTopologies runs body as a subtest on each of SharedTopologies: a single
// node, a three-master cluster and a Sentinel topology, all shared by the test
// binary, so body must keep to its own keys (see Prefix).
func OnTopologies(t *testing.T, body func(t *testing.T, rdb redis.UniversalClient)) {
	for _, top := range SharedTopologies() {
		t.Run(top.Name, func(t *testing.T) { body(t, top.New(t)) })
	}
}

// Name is the (sub)test's name made into a key space of its own on a shared
// server: slashes become colons, spaces underscores, and braces go, so that
// no name makes a hash tag by accident. A test run again by the same binary
// (-count) is named afresh each time, its name followed by "~" and the run
// (from the second on), so that no run meets the keys, users or names an
// earlier one left on a shared server; a child process (Subprocesses, or
// any given RunEnv) names its test as the parent's run does.
func Name(t testing.TB) string {
	base := nameReplacer.Replace(t.Name())
	if n := runOf(t, base); n > 1 {
		return fmt.Sprintf("%s~%d", base, n)
	}
	return base
}

// RunEnv is the environment variable, NAME=value, that makes a child
// process started by t name its tests as t's run does (Name).
func RunEnv(t testing.TB) string {
	return fmt.Sprintf("%s=%d", runEnv, runOf(t, nameReplacer.Replace(t.Name())))
}

const runEnv = "CACHEGUARD_TEST_RUN"

// runs numbers the runs of each test name in this process: name -> the
// *testing.T of each run -> its number. Holding them keeps any later test
// from being allocated at the address of an earlier one.
var runs struct {
	sync.Mutex
	of map[string]map[testing.TB]int
}

func runOf(t testing.TB, name string) int {
	runs.Lock()
	defer runs.Unlock()
	if runs.of == nil {
		runs.of = map[string]map[testing.TB]int{}
	}
	byT := runs.of[name]
	if byT == nil {
		byT = map[testing.TB]int{}
		runs.of[name] = byT
	}
	if n, ok := byT[t]; ok {
		return n
	}
	// The first run in a child process is the parent's run (RunEnv).
	first := 1
	if _, err := fmt.Sscan(os.Getenv(runEnv), &first); err != nil || first < 1 {
		first = 1
	}
	n := first + len(byT)
	byT[t] = n
	return n
}

var nameReplacer = strings.NewReplacer("/", ":", " ", "_", "{", "", "}", "")

// Prefix is Name followed by a colon: a key prefix of the test's own.
func Prefix(t testing.TB) string { return Name(t) + ":" }

// EachMaster runs fn on every master behind rdb: each master of a cluster,
// or the one server of a single node or Sentinel client. A failure, or fn
// still running after 30 s, fails the test.
func EachMaster(t testing.TB, rdb redis.UniversalClient, fn func(ctx context.Context, c *redis.Client) error) {
	t.Helper()
	eachNode(t, rdb, false, fn)
}

// EachNode is EachMaster on a cluster's replicas too (ACL users, which
// replication does not carry, for a client that reads replicas).
func EachNode(t testing.TB, rdb redis.UniversalClient, fn func(ctx context.Context, c *redis.Client) error) {
	t.Helper()
	eachNode(t, rdb, true, fn)
}

func eachNode(t testing.TB, rdb redis.UniversalClient, replicas bool, fn func(ctx context.Context, c *redis.Client) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if replicas {
			err = c.ForEachShard(ctx, fn)
		} else {
			err = c.ForEachMaster(ctx, fn)
		}
	case *redis.Client:
		err = fn(ctx, c)
	default:
		err = fmt.Errorf("unexpected client %T", rdb)
	}
	if err != nil {
		t.Fatalf("redistest: on every node: %v", err)
	}
}
