package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Replicated starts a primary and one replica of it (real redis-server
// processes; skipped like Start without one) and returns once the replica
// reports its link to the primary up.
func Replicated(t testing.TB) (primary, replica *Server) {
	t.Helper()
	NeedServer(t)
	return replicated(t, Start)
}

func replicated(t testing.TB, start starter) (primary, replica *Server) {
	t.Helper()
	primary = start(t)
	replica = start(t)
	host, port := splitAddr(primary.Addr)
	c := replica.Client()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatalf("redistest: REPLICAOF: %v", err)
	}
	// Wait for the initial sync (a process coming up, not the code under
	// test).
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return primary, replica
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: replica of %s never in sync: %v\n%s", primary.Addr, err, info)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
