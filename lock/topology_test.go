package lock

import (
	"os"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// Child processes started by the tests run TestTopologies with envRole set.
const (
	envRole       = "LOCK_TEST_ROLE"
	roleExclusion = "exclusion"
	roleKilled    = "killed"
)

// TestTopologies runs every single-Redis test against a single server, a
// three-master cluster and a Sentinel topology, starting each layout once.
func TestTopologies(t *testing.T) {
	if _, ok := redistest.IsChild(); ok {
		switch os.Getenv(envRole) {
		case roleExclusion:
			exclusionChild(t)
		case roleKilled:
			killedChild(t)
		case roleSemaphore:
			semaphoreChild(t)
		}
		return
	}
	for _, topo := range append(redistest.Topologies(), redistest.SentinelTopology()) {
		t.Run(topo.Name, func(t *testing.T) {
			rdb := topo.New(t)
			t.Run("mutex", func(t *testing.T) { mutexTests(t, rdb) })
			t.Run("unfenced mutex", func(t *testing.T) { unfencedTests(t, rdb) })
			t.Run("rwmutex", func(t *testing.T) { rwTests(t, rdb) })
			t.Run("lease", func(t *testing.T) { leaseTests(t, rdb) })
			t.Run("subscriptions", func(t *testing.T) { testSubscriptionLifecycle(t, rdb) })
			t.Run("release names one client", func(t *testing.T) { testReleaseNamesOneClient(t, rdb) })
			t.Run("close", func(t *testing.T) { testClose(t, rdb) })
			t.Run("exclusion across processes", func(t *testing.T) { testExclusion(t, rdb) })
			t.Run("fencing", func(t *testing.T) { fencingTests(t, rdb) })
			t.Run("semaphore", func(t *testing.T) { semaphoreTests(t, rdb) })
			t.Run("one subscriber per node", func(t *testing.T) { testOneSubscriberPerNode(t, rdb) })
			t.Run("unlock with a cancelled context", func(t *testing.T) { testUnlockCancelled(t, rdb) })
			t.Run("multilock", func(t *testing.T) { multiLockTests(t, clientRig(rdb)) })
		})
	}
}
