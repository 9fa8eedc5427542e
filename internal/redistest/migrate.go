package redistest

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// MigrateSlot moves slot, with its keys, to master to, the way a resharding
// does: IMPORTING on the target, MIGRATING on the source, MIGRATE of every
// key, then SETSLOT NODE on every master. It returns the source's index.
func (cl *Cluster) MigrateSlot(ctx context.Context, slot, to int) (int, error) {
	clients := make([]*redis.Client, len(cl.Masters))
	ids := make([]string, len(cl.Masters))
	for i, m := range cl.Masters {
		clients[i] = ClientLike(m.Options())
		defer clients[i].Close()
		id, err := clients[i].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return -1, err
		}
		ids[i] = id
	}
	from := -1
	for i, c := range clients {
		slots, err := c.ClusterSlots(ctx).Result()
		if err != nil {
			return -1, err
		}
		for _, r := range slots {
			if int(r.Start) <= slot && slot <= int(r.End) && len(r.Nodes) > 0 && r.Nodes[0].ID == ids[i] {
				from = i
			}
		}
	}
	if from < 0 {
		return -1, fmt.Errorf("cacheguard: redistest: no master owns slot %d", slot)
	}
	if from == to {
		return from, nil
	}
	src, dst := clients[from], clients[to]
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]).Err(); err != nil {
		return from, err
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]).Err(); err != nil {
		return from, err
	}
	host, port := splitAddr(cl.Masters[to].Addr)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return from, err
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return from, err
		}
	}
	for _, i := range append([]int{to, from}, others(len(clients), to, from)...) {
		if err := clients[i].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(); err != nil {
			return from, err
		}
	}
	return from, nil
}

func others(n, a, b int) []int {
	var o []int
	for i := 0; i < n; i++ {
		if i != a && i != b {
			o = append(o, i)
		}
	}
	return o
}
