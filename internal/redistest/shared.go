package redistest

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Shared servers live for the whole test binary, so that a package whose tests
// each need a cluster does not form one per test. Tests sharing a server must
// keep to their own keys (a prefix per test). The package's TestMain must call
// Main so that the processes are stopped at the end:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
var shared struct {
	mu      sync.Mutex
	tb      *sharedTB
	single  *Server
	cluster *Cluster
	errS    error
	errC    error
	triedS  bool
	triedC  bool
	// The Sentinel topology, started on first use.
	sentinel *Sentinel
	errN     error
	triedN   bool
}

// Main runs the tests and then stops the shared servers.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	if shared.tb != nil {
		shared.tb.cleanup()
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// SharedSingle returns a client for a single-node server shared by the test
// binary (miniredis per test where redis-server is missing).
func SharedSingle(t testing.TB) redis.UniversalClient {
	t.Helper()
	if ServerPath() == "" {
		_, c := Single(t)
		return c
	}
	s, err := sharedOnce(&shared.triedS, &shared.errS, &shared.single, func(tb testing.TB) *Server { return Start(tb) })
	if err != nil {
		t.Fatalf("redistest: shared server: %v", err)
	}
	return clientFor(t, redis.NewClient(&redis.Options{Addr: s.Addr}))
}

// SharedCluster returns a client for a three-master cluster shared by the
// test binary; like StartCluster it skips without redis-server.
func SharedCluster(t testing.TB) redis.UniversalClient {
	t.Helper()
	NeedServer(t)
	cl, err := sharedOnce(&shared.triedC, &shared.errC, &shared.cluster, func(tb testing.TB) *Cluster { c, _ := StartCluster(tb); return c })
	if err != nil {
		t.Fatalf("redistest: shared cluster: %v", err)
	}
	return clientFor(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()}))
}

// SharedSentinel returns a failover client for a Sentinel topology shared by
// the test binary; like StartSentinel it skips without redis-server. Tests
// on it must not fail the master over.
func SharedSentinel(t testing.TB) redis.UniversalClient {
	t.Helper()
	NeedServer(t)
	s, err := sharedOnce(&shared.triedN, &shared.errN, &shared.sentinel, func(tb testing.TB) *Sentinel { s, _ := StartSentinel(tb); return s })
	if err != nil {
		t.Fatalf("redistest: shared sentinel: %v", err)
	}
	return s.newClient(t)
}

// SharedTopologies is Topologies on shared servers.
func SharedTopologies() []Topology {
	return []Topology{
		{Name: "single", New: SharedSingle},
		{Name: "cluster", New: SharedCluster},
		{Name: "sentinel", New: SharedSentinel},
	}
}

func clientFor(t testing.TB, c redis.UniversalClient) redis.UniversalClient {
	t.Cleanup(func() { c.Close() })
	return c
}

// sharedOnce starts a shared layout into *v on first use (tried and errp
// remember the attempt) and returns it.
func sharedOnce[T any](tried *bool, errp *error, v *T, start func(testing.TB) T) (T, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !*tried {
		*tried = true
		*errp = sharedStart(func(tb testing.TB) { *v = start(tb) })
	}
	return *v, *errp
}

// sharedStart runs start with a TB that outlives any one test.
func sharedStart(start func(testing.TB)) error {
	if shared.tb == nil {
		shared.tb = &sharedTB{}
	}
	tb := shared.tb
	tb.err = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		start(tb)
	}()
	<-done
	return tb.err
}

// sharedTB is the part of testing.TB the starters use, for servers that
// belong to the whole binary. Fatalf and Skip end the starting goroutine.
type sharedTB struct {
	testing.TB
	cleanups []func()
	err      error
}

func (s *sharedTB) Helper()             {}
func (s *sharedTB) Logf(string, ...any) {}
func (s *sharedTB) Cleanup(f func())    { s.cleanups = append(s.cleanups, f) }
func (s *sharedTB) Fatalf(f string, a ...any) {
	s.err = fmt.Errorf(f, a...)
	runtime.Goexit()
}
func (s *sharedTB) Skip(a ...any) {
	s.err = fmt.Errorf("%s", fmt.Sprint(a...))
	runtime.Goexit()
}
func (s *sharedTB) TempDir() string {
	d, err := os.MkdirTemp("", "redistest")
	if err != nil {
		s.Fatalf("temp dir: %v", err)
	}
	s.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (s *sharedTB) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}
