package lock

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// TestRedlockFenceWithSkewedClock pins what a Redlock token guarantees when
// one node's clock runs ahead (simulated by a counter an hour ahead of the
// clocks, which is what that node would draw):
//
//   - the next holder's token is above it, since that node is in the quorum
//     and its token is the largest drawn;
//   - the token written back to the quorum keeps the following holders above
//     it even after that node forgets its counter (restart, expiry);
//   - once every node has forgotten its counter (no acquisition for longer
//     than a lease), tokens fall back on the clocks of the nodes that answer,
//     and go back by the skew: the guarantee then rests on the clocks.
func TestRedlockFenceWithSkewedClock(t *testing.T) {
	nodes := redistest.Nodes(t, 5)
	ctx := testCtx(t)
	r := newRedlock(t, nodes, WithNodeTimeout(time.Second))
	m := r.Mutex("skew")
	direct := nodeClients(t, nodes)
	const key = "cacheguard:lock:{skew}"

	t1 := takeToken(t, m.Lock)
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if err := setMutex(ctx, direct[0], key, wire.FencedLock{Token: ahead}); err != nil {
		t.Fatal(err)
	}
	t2 := takeToken(t, m.Lock)
	if t2 <= ahead {
		t.Fatalf("token %d, below the fast node's %d", t2, ahead)
	}
	direct[0].Del(ctx, key) // the fast node forgets
	t3 := takeToken(t, m.Lock)
	if t3 <= t2 {
		t.Fatalf("token %d after %d: the written-back token was lost", t3, t2)
	}
	for _, c := range direct {
		c.Del(ctx, key) // every counter gone
	}
	t4 := takeToken(t, m.Lock)
	if t4 >= t3 {
		t.Fatalf("token %d after every counter was lost: expected the clocks (about %d) to rule", t4, time.Now().UnixMicro())
	}
	if t1 <= 0 || t4 <= t1 {
		t.Fatalf("tokens %d then %d: the clock floor should still exceed the first", t1, t4)
	}
}
