package transport

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Copies places the copies of hot keys on a Redis Cluster
// (cache.WithHotKeyCopies): up to n copies of a key, each on a master that
// owns neither the key nor another of its copies, named with a hash tag
// whose slot that master owns (wire.CopyKey).
//
// Every instance derives the same places from its own view of the slot
// map (Masters): the masters in the order of the slots they own, the key's
// own master left out, and the rest taken from a point the
// key's hash chooses, so that the copies of many hot keys spread over every
// master. A reader thus finds the copies another instance wrote, and a
// write deletes them. A view that differs for a while (a slot migrating, a
// failover) makes a reader miss a copy and read the key itself, or a write
// miss a copy, which then expires within its TTL: the bound a copy states.
type Copies struct {
	masters *Masters
	prefix  string
	n       int
	// TTL is the longest a copy lives: how long one that a write failed to
	// delete may still be read.
	TTL time.Duration
}

// NewCopies returns the placement of n copies of each hot key of the cache
// of prefix, on the masters of ms, living at most ttl.
func NewCopies(ms *Masters, prefix string, n int, ttl time.Duration) *Copies {
	return &Copies{masters: ms, prefix: prefix, n: n, TTL: ttl}
}

// places returns p's masters that hold rkey's copies, in order: the
// masters after the one its hash chooses, rkey's own master left out.
func (c *Copies) places(ctx context.Context, rkey string) (p *masterPlan, at []int) {
	if p = c.masters.current(ctx); p == nil || len(p.masters) < 2 {
		return nil, nil
	}
	node, err := c.masters.cc.MasterForKey(ctx, rkey)
	if err != nil {
		return nil, nil
	}
	own := node.Options().Addr
	h := fnv.New32a()
	h.Write([]byte(rkey))
	start := int(h.Sum32() % uint32(len(p.masters)))
	for i := 0; i < len(p.masters) && len(at) < c.n; i++ {
		if j := (start + i) % len(p.masters); p.masters[j] != own {
			at = append(at, j)
		}
	}
	return p, at
}

// Keys are the keys of rkey's copies.
func (c *Copies) Keys(ctx context.Context, rkey string) []string {
	p, at := c.places(ctx, rkey)
	keys := make([]string, len(at))
	for i, j := range at {
		keys[i] = wire.CopyKey(c.prefix, rkey, p.tags[j])
	}
	return keys
}

// Pick picks one of rkey and its copies at random, each as likely: the key
// of the copy, or "" for rkey itself.
func (c *Copies) Pick(ctx context.Context, rkey string) string {
	p, at := c.places(ctx, rkey)
	if i := rand.IntN(len(at) + 1); i < len(at) {
		return wire.CopyKey(c.prefix, rkey, p.tags[at[i]])
	}
	return ""
}

// Seed writes raw, the entry just read from the key itself, as the copy
// ckey, for at most ttl (at most TTL), through r's queue of writes.
func (c *Copies) Seed(ctx context.Context, r *Redis, ckey string, raw []byte, ttl time.Duration) error {
	cmd := redis.NewStatusCmd(ctx, "set", ckey, raw, "px", min(ttl, c.TTL).Milliseconds())
	if err := r.Send(ctx, ckey, cmd, nil); err != nil {
		return err
	}
	return cmd.Err()
}

// Delete deletes the copies of rkeys, in one pipeline whose commands go to
// their nodes at once.
func (c *Copies) Delete(ctx context.Context, rkeys []string) error {
	var keys []string
	for _, rkey := range rkeys {
		keys = append(keys, c.Keys(ctx, rkey)...)
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := c.masters.cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
	return err
}
