package redistest

import (
	"context"
	"fmt"
	"strings"
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
// no name makes a hash tag by accident.
func Name(t testing.TB) string {
	return nameReplacer.Replace(t.Name())
}

var nameReplacer = strings.NewReplacer("/", ":", " ", "_", "{", "", "}", "")

// Prefix is Name followed by a colon: a key prefix of the test's own.
func Prefix(t testing.TB) string { return Name(t) + ":" }

// EachMaster runs fn on every master behind rdb: each master of a cluster,
// or the one server of a single node or Sentinel client. A failure, or fn
// still running after 30 s, fails the test.
func EachMaster(t testing.TB, rdb redis.UniversalClient, fn func(ctx context.Context, c *redis.Client) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, fn)
	case *redis.Client:
		err = fn(ctx, c)
	default:
		err = fmt.Errorf("unexpected client %T", rdb)
	}
	if err != nil {
		t.Fatalf("redistest: on every master: %v", err)
	}
}
