package lock

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// TestFenceCounterOutlivesRelease: a Mutex's fencing counter is kept with
// the released lock (for its last lease), so a token drawn ahead of the
// server's clock (a Redlock write-back from a node whose clock is ahead, or
// many acquisitions within one microsecond) is still exceeded by the next
// holder. Relying on the clock alone after a release would go back here.
func TestFenceCounterOutlivesRelease(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	c := newClient(t, rdb)
	m := c.Mutex("fence-ahead")
	takeToken(t, m.Lock)
	// An hour ahead of the server's clock, in microseconds.
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if err := setMutex(ctx, rdb, "cacheguard:lock:{fence-ahead}", wire.FencedLock{Token: ahead}); err != nil {
		t.Fatal(err)
	}
	if tok := takeToken(t, m.Lock); tok <= ahead {
		t.Fatalf("token %d after a released token %d: went back", tok, ahead)
	}
	if tok := takeToken(t, m.TryLock); tok <= ahead+1 {
		t.Fatalf("token %d: want above %d", tok, ahead+1)
	}
}
