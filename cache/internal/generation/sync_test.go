package generation

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// The sync's own cluster client must not share the user client's Addrs:
// go-redis appends the nodes it discovers to that slice, and two clients
// appending to one array under two locks race (the race detector caught it
// on a fleet test) and overwrite each other's node lists.
func TestSyncClientOwnsItsAddrs(t *testing.T) {
	addrs := make([]string, 1, 8) // room to append in place, as a user's slice may have
	addrs[0] = "127.0.0.1:1"
	user := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer user.Close()
	s, closeSync := NewSyncClient(user)
	defer closeSync()
	own := s.(*redis.ClusterClient).Options().Addrs
	if &own[:cap(own)][cap(own)-1] == &addrs[:cap(addrs)][cap(addrs)-1] {
		t.Fatal("the sync client's Addrs share the user client's array")
	}
}
