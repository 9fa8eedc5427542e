package otel

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// startRedis returns a Redis for one test: a redis-server process of its own,
// or miniredis when redis-server is not installed (internal/redistest).
// Kill takes it down (an outage); the test's cleanup is safe after it.
func startRedis(t *testing.T) *redistest.Server {
	t.Helper()
	s, _ := redistest.Single(t)
	return s
}

// newClient returns a client of s that fails at once while s is down.
func newClient(t *testing.T, s *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}
