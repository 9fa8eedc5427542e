package hotkey

import (
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The fleet view's exchanges work for a Redis user granted exactly the lines
// of docs/acl.md, on a single node and a cluster: none fails, and nothing is
// refused to it.
func TestACLFleet(t *testing.T) {
	vars := func(*testing.T) map[string]string {
		return map[string]string{"hotkey-prefix": wire.HotKeyPrefix, "group": "svc"}
	}
	redistest.OnACL(t, false, []string{"hotkey"}, vars, func(t *testing.T, rdb, _ redis.UniversalClient) {
		r := newFleetRig(t, 2, func(int) redis.UniversalClient { return rdb })
		for range 2 * int(fleetWindow/fleetTick) {
			r.tick("warm")
		}
		for i, d := range r.dets {
			if st := d.Stats(); st.FleetExchanges == 0 || st.FleetErrors != 0 {
				t.Fatalf("detector %d: %+v", i, st)
			}
		}
	})
}
