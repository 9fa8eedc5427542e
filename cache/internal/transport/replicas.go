package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/replwait"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Replicas is the replication barrier of a cache whose reads may go to
// replicas (cache.WithReplicaReads): a write returns once every replica
// that a read may go to holds it, or fails with ErrReplicaLag after MaxLag.
//
// On each master the write reached, one pipeline writes the barrier key on
// the slot of one of the write's keys (wire.BarrierKey) and sends WAIT for
// as many replicas as that master has (counts), on one connection
// (internal/replwait): once the barrier is acknowledged, so is the write.
// A replica that cannot be asked which master it follows might be one that
// a read goes to, and fails the barrier.
type Replicas struct {
	cc     *redis.ClusterClient
	prefix string
	MaxLag time.Duration
	known  atomic.Pointer[replicaCounts]
	asking sync.Mutex // held while the counts are asked
}

// replicaCounts is how many replicas each master has.
type replicaCounts struct {
	made time.Time
	of   map[string]int // master address -> replicas
	err  error          // a node that could not be asked
}

// barrierTTL is how long a barrier key lives: long enough to reach every
// replica, short enough to leave nothing behind.
const barrierTTL = time.Minute

// NewReplicas returns the replication barrier of the cache of prefix on
// cc's masters, which fails after maxLag.
func NewReplicas(cc *redis.ClusterClient, prefix string, maxLag time.Duration) *Replicas {
	return &Replicas{cc: cc, prefix: prefix, MaxLag: maxLag}
}

// ReadsReplicas reports a client that may send reads to replicas: a
// cluster client (or a failover cluster client, under Sentinel) with
// ReadOnly, RouteByLatency or RouteRandomly.
func ReadsReplicas(rdb redis.UniversalClient) bool {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return false
	}
	o := cc.Options()
	return o.ReadOnly || o.RouteByLatency || o.RouteRandomly
}

// Wait returns once every replica that a read may go to has acknowledged
// the writes of rkeys, which completed. It returns ctx's error if ctx ended
// first, and otherwise, after about MaxLag at most, an error wrapping
// ErrReplicaLag (and no context error) when it could not make sure of
// that: a replica did not acknowledge, or could not be asked, or a master
// could not be reached. calls bounds its Redis calls on any client.
func (r *Replicas) Wait(ctx context.Context, calls call.Bound, rkeys []string) error {
	start := time.Now()
	// Strict: the bound holds even for a caller that could wait for ever.
	_, err := call.Do(calls.Strict(), ctx, r.MaxLag+barrierSlack, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.wait(ctx, start, rkeys)
	}, nil)
	switch {
	case err == nil:
		return nil
	case kind.Ended(ctx) != nil:
		return kind.Ended(ctx)
	case errors.Is(err, errs.ErrReplicaLag):
		return err
	}
	return kind.Errorf("%w: %v", errs.ErrReplicaLag, err)
}

// barrierSlack is how long past MaxLag Wait waits for the replies of its
// WAITs, which return at MaxLag.
const barrierSlack = 250 * time.Millisecond

// wait is Wait's work: the counts, then a barrier on each master of rkeys
// at once, whose WAITs end MaxLag after start.
func (r *Replicas) wait(ctx context.Context, start time.Time, rkeys []string) error {
	type master struct {
		node *redis.Client
		rkey string // one of the write's keys on it
	}
	masters := map[string]master{}
	for _, k := range rkeys {
		node, err := r.cc.MasterForKey(ctx, k)
		if err != nil {
			return err
		}
		masters[node.Options().Addr] = master{node, k}
	}
	counts := r.counts(ctx, false)
	for addr := range masters {
		if _, ok := counts.of[addr]; !ok && counts.err == nil {
			counts = r.counts(ctx, true) // a master the counts do not know yet
			break
		}
	}
	if counts.err != nil {
		return counts.err
	}
	for addr := range masters {
		if _, ok := counts.of[addr]; !ok {
			return kind.Errorf("%w: master %s not counted", errs.ErrReplicaLag, addr)
		}
	}
	timeout := max(time.Millisecond, r.MaxLag-time.Since(start))
	failed := make([]error, 0, len(masters))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for addr, m := range masters {
		want := counts.of[addr]
		if want == 0 {
			continue
		}
		wg.Go(func() {
			err := r.barrier(ctx, addr, m.node, m.rkey, want, timeout)
			mu.Lock()
			failed = append(failed, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(failed...)
}

// barrier writes the barrier beside rkey on the master at addr, then waits
// for its want replicas.
func (r *Replicas) barrier(ctx context.Context, addr string, node *redis.Client, rkey string, want int, timeout time.Duration) error {
	mark := func(p redis.Pipeliner) { p.Set(ctx, wire.BarrierKey(r.prefix, rkey), "", barrierTTL) }
	n, err := replwait.Wait(ctx, node.Pipelined, mark, want, timeout)
	switch {
	case err != nil:
		return kind.Errorf("%w: master %s: %v", errs.ErrReplicaLag, addr, err)
	case n < int64(want):
		return kind.Errorf("%w: %d of the %d replicas of %s within %v", errs.ErrReplicaLag, n, want, addr, r.MaxLag)
	}
	return nil
}

// counts is how many replicas each master has, asked again when older
// than planEvery (or at once when force is set): the larger of the number
// the master lists as connected (INFO replication) and the number of
// replicas in the client's slot map that name it as their master (ROLE).
// The first counts a replica that other instances' slot maps list and this
// one's does not yet; the second one that lost its link to the master,
// which may still answer reads. They are asked apart from the caller's
// context, for at most MaxLag; while they are being asked, callers take
// the counts there are, if any.
func (r *Replicas) counts(ctx context.Context, force bool) *replicaCounts {
	c := r.known.Load()
	if c != nil && !force && time.Since(c.made) < planEvery {
		return c
	}
	if c == nil {
		r.asking.Lock()
	} else if !r.asking.TryLock() {
		return c
	}
	defer r.asking.Unlock()
	if c2 := r.known.Load(); c2 != c {
		return c2 // asked meanwhile
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.MaxLag)
	defer cancel()
	c = &replicaCounts{made: time.Now(), of: map[string]int{}}
	var mu sync.Mutex
	atLeast := func(addr string, n int) {
		mu.Lock()
		c.of[addr] = max(c.of[addr], n)
		mu.Unlock()
	}
	err := r.cc.ForEachMaster(ctx, func(ctx context.Context, master *redis.Client) error {
		info, err := master.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("master %s not asked its replicas: %v", master.Options().Addr, err)
		}
		n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
		atLeast(master.Options().Addr, n)
		return nil
	})
	if err == nil {
		named := map[string]int{}
		err = r.cc.ForEachSlave(ctx, func(ctx context.Context, replica *redis.Client) error {
			role, err := replica.Do(ctx, "role").Slice()
			if err != nil {
				return fmt.Errorf("replica %s not asked its master: %v", replica.Options().Addr, err)
			}
			if len(role) < 3 || role[0] != "slave" {
				return nil // promoted meanwhile: a master, read as one
			}
			host, _ := role[1].(string)
			port, _ := role[2].(int64)
			mu.Lock()
			named[net.JoinHostPort(host, strconv.FormatInt(port, 10))]++
			mu.Unlock()
			return nil
		})
		for addr, n := range named {
			atLeast(addr, n)
		}
	}
	if err != nil {
		c.err = kind.Errorf("%w: %v", errs.ErrReplicaLag, err)
	}
	r.known.Store(c)
	return c
}

// infoField is the value of field in an INFO reply, "" without one.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
