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
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Replicas is the replication barrier of a cache whose client reads from
// replicas (cache.WithReplicaReads): a write returns once every replica
// that a read may go to holds it, or fails with ErrReplicaLag after MaxLag.
//
// On each master the write reached, one pipeline on one connection writes
// the barrier key (wire.BarrierKey, on a slot of that master) and then
// sends WAIT for as many replicas as that master has (counts).
// WAIT counts the acknowledgements of everything that connection wrote,
// and a master's replication stream is one ordered log: once the barrier
// is acknowledged, so is every write that completed on the master before
// it was sent. A replica that cannot be asked which master it follows
// might be one that a read goes to, and fails the barrier.
type Replicas struct {
	masters *Masters
	prefix  string
	MaxLag  time.Duration
	known   atomic.Pointer[replicaCounts]
	asking  sync.Mutex // held while the counts are asked
}

// replicaCounts is how many replicas each master has, in the client's view.
type replicaCounts struct {
	made time.Time
	of   map[string]int // master address -> replicas
	err  error          // a replica that could not be asked
}

// barrierTTL is how long a barrier key lives: long enough to reach every
// replica, short enough to leave nothing behind.
const barrierTTL = time.Minute

// NewReplicas returns the replication barrier of the cache of prefix on
// the masters of ms, which fails after maxLag.
func NewReplicas(ms *Masters, prefix string, maxLag time.Duration) *Replicas {
	return &Replicas{masters: ms, prefix: prefix, MaxLag: maxLag}
}

// Wait returns once every replica that a read may go to has acknowledged
// the writes of rkeys, which completed. It returns ctx's error if ctx ended
// first, and otherwise, after about MaxLag at most, an error wrapping
// ErrReplicaLag when it could not make sure of that: a replica did not
// acknowledge, or could not be asked, or a master could not be reached.
// calls bounds its Redis calls on any client.
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
	nodes := map[string]*redis.Client{}
	for _, k := range rkeys {
		node, err := r.masters.cc.MasterForKey(ctx, k)
		if err != nil {
			return err
		}
		nodes[node.Options().Addr] = node
	}
	counts := r.counts(ctx)
	if counts.err != nil {
		return counts.err
	}
	p := r.masters.current(ctx)
	timeout := max(time.Millisecond, r.MaxLag-time.Since(start))
	errs := make([]error, 0, len(nodes))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for addr, node := range nodes {
		wg.Go(func() {
			err := r.barrier(ctx, p, addr, node, counts.of[addr], timeout)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// barrier writes the barrier on the master at addr, then waits for its
// want replicas.
func (r *Replicas) barrier(ctx context.Context, p *masterPlan, addr string, node *redis.Client, want int, timeout time.Duration) error {
	if want == 0 {
		return nil
	}
	tag := ""
	if p != nil {
		for i, m := range p.masters {
			if m == addr {
				tag = p.tags[i]
			}
		}
	}
	if tag == "" {
		return fmt.Errorf("no slot of master %s known", addr)
	}
	// In a pipeline, WAIT's reply is bounded by the client's read timeout,
	// which New checked is longer than MaxLag.
	wait := redis.NewIntCmd(ctx, "wait", want, timeout.Milliseconds())
	_, err := node.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, wire.BarrierKey(r.prefix, tag), "", barrierTTL)
		return pipe.Process(ctx, wait)
	})
	if err != nil {
		return err
	}
	if n := wait.Val(); n < int64(want) {
		return kind.Errorf("%w: %d of the %d replicas of %s within %v", errs.ErrReplicaLag, n, want, addr, r.MaxLag)
	}
	return nil
}

// counts is how many replicas each master has, asked again when older than
// planEvery: the larger of the number the master lists as connected (INFO
// replication) and the number of replicas in the client's slot map that
// name it as their master (ROLE). The first counts a replica that other
// instances' slot maps list and this one's does not yet; the second one
// that lost its link to the master, which may still answer reads.
func (r *Replicas) counts(ctx context.Context) *replicaCounts {
	if c := r.known.Load(); c != nil && time.Since(c.made) < planEvery {
		return c
	}
	r.asking.Lock() // one refresh at a time; the others take its counts
	defer r.asking.Unlock()
	if c := r.known.Load(); c != nil && time.Since(c.made) < planEvery {
		return c
	}
	c := &replicaCounts{made: time.Now(), of: map[string]int{}}
	var mu sync.Mutex
	atLeast := func(addr string, n int) {
		mu.Lock()
		c.of[addr] = max(c.of[addr], n)
		mu.Unlock()
	}
	named := map[string]int{}
	err := r.masters.cc.ForEachSlave(ctx, func(ctx context.Context, replica *redis.Client) error {
		role, err := replica.Do(ctx, "role").Slice()
		if err != nil {
			return kind.Errorf("%w: replica %s not asked its master: %w", errs.ErrReplicaLag, replica.Options().Addr, err)
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
	if err == nil {
		err = r.masters.cc.ForEachMaster(ctx, func(ctx context.Context, master *redis.Client) error {
			info, err := master.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
			atLeast(master.Options().Addr, n)
			return nil
		})
	}
	c.err = err
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
