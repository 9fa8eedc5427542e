package transport

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Masters is a cluster client's view of its masters, for the features that
// write to a master of their choice (hot-key copies, the replication
// barrier): each master with a hash tag whose slot it owns, the tags "0",
// "1", … tried in order. It is read from the client's slot map, so making
// it sends no command.
type Masters struct {
	cc   *redis.ClusterClient
	plan atomic.Pointer[masterPlan]
}

// masterPlan is one view of the masters.
type masterPlan struct {
	made    time.Time
	masters []string // addresses, in the order their first tag was found
	tags    []string // a tag whose slot masters[i] owns
}

const (
	planTags  = 1024        // tags tried when making a plan
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
	for i := range planTags {
		tag := strconv.Itoa(i)
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
