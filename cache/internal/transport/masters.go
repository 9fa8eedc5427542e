package transport

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Masters is a cluster client's view of its masters, for hot-key copies:
// each master with a hash tag whose slot it owns (wire.SlotTag), found by
// asking the client's slot map for every 16th slot, so that a master owning
// a range of 16 slots or more is found, and no command is sent.
type Masters struct {
	cc   *redis.ClusterClient
	plan atomic.Pointer[masterPlan]
}

// masterPlan is one view of the masters.
type masterPlan struct {
	made    time.Time
	masters []string // addresses, in the order of their first slot asked
	tags    []string // a tag whose slot masters[i] owns
}

const (
	planStep  = 16          // the slots asked for: every planStep-th
	planEvery = time.Second // a plan is made again when older than this
)

// NewMasters returns the view of cc's masters.
func NewMasters(cc *redis.ClusterClient) *Masters { return &Masters{cc: cc} }

// current is the plan, made again when older than planEvery; nil if the
// slot map is not known.
func (m *Masters) current(ctx context.Context) *masterPlan {
	p := m.plan.Load()
	if p != nil && time.Since(p.made) < planEvery {
		return p
	}
	np := &masterPlan{made: time.Now()}
	seen := map[string]bool{}
	for slot := 0; slot < wire.Slots; slot += planStep {
		tag := wire.SlotTag(slot)
		node, err := m.cc.MasterForKey(ctx, "{"+tag+"}")
		if err != nil {
			return p // the old plan, if any, until the map is known again
		}
		if addr := node.Options().Addr; !seen[addr] {
			seen[addr] = true
			np.masters, np.tags = append(np.masters, addr), append(np.tags, tag)
		}
	}
	m.plan.Store(np)
	return np
}
