package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Client takes locks on one Redis deployment (a single server, a sentinel
// group or a cluster). It owns the watchdog goroutine of the locks it holds
// and the subscriber connections of its waiters; Close stops them.
type Client struct {
	*engine
	rdb redis.UniversalClient
	cfg config
	pub publisher
}

// New returns a Client for rdb. The options set defaults for every lock of
// the client; see Option.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	cfg := defaultConfig()
	cfg.apply(partClient, opts)
	if cfg.errs.Err() != nil {
		return nil, cfg.errs.Err()
	}
	id := newOwner()
	c := &Client{rdb: rdb, cfg: cfg}
	ntf := newNotifier(rdb, id, cfg.report)
	c.pub = publisher{cmd: ntf.publishCmd(), payload: id}
	c.engine = newEngine(cfg.report, ntf, c.renewBatch)
	c.cfg.calls = c.engine.bound(rdb)
	if c.cfg.opTimeout > 0 {
		c.cfg.calls = c.cfg.calls.Strict()
	}
	return c, nil
}

// Close stops the watchdog and the notification connections and waits for
// them, and for Redis calls abandoned at a deadline that go-redis is still
// running (up to 5 s: on a client with default options such a call lasts
// until the client's ReadTimeout). Locks still held are no longer renewed: their handles' contexts are
// cancelled (cause matching ErrLost and ErrClosed) and the locks expire with
// their leases unless unlocked. Close does not close the Redis client. It
// returns nil, or an error wrapping context.DeadlineExceeded when calls
// were still running after 5 s (they end by the client's own timeouts); a
// second Close returns nil.
func (c *Client) Close() error {
	return c.engine.close()
}

// renewBatch renews the due holds in one pipeline (a cluster client splits
// it by node).
func (c *Client) renewBatch(ctx context.Context, batch []renewReq) []renewal {
	out := make([]renewal, len(batch))
	if len(batch) == 1 {
		r := batch[0]
		out[0].validUntil, out[0].err = r.h.b.renew(ctx, r.h.owner, r.lease)
		return out
	}
	for _, i := range c.renewPipelined(ctx, batch, out) {
		// Not pipelinable: one call each.
		r := batch[i]
		out[i].validUntil, out[i].err = r.h.b.renew(ctx, r.h.owner, r.lease)
	}
	return out
}

// renewPipelined renews the holds of batch that can be pipelined in one
// pipeline by SHA (a renewal a server answered NOSCRIPT, its script cache
// flushed or a node new to the script, sent again with the body:
// internal/script), and returns the others.
func (c *Client) renewPipelined(ctx context.Context, batch []renewReq, out []renewal) []int {
	var left, idx []int
	var calls []script.Call
	for i, r := range batch {
		if pb, ok := r.h.b.(pipelined); ok {
			idx = append(idx, i)
			calls = append(calls, pb.renewCall(r.h.owner, r.lease))
		} else {
			left = append(left, i)
		}
	}
	if len(calls) == 0 {
		return left
	}
	start := time.Now()
	// Errors are read per command below. A pipeline abandoned at the
	// deadline fails every renewal in it (transient: retried).
	cmds, err := call.Do(c.cfg.calls, ctx, 0, func(ctx context.Context) ([]*redis.Cmd, error) {
		cmds, _ := script.Run(ctx, c.rdb, calls) // a renewal left unanswered fails: pipe.ErrNoReply
		return cmds, nil
	}, nil)
	for j, i := range idx {
		if err != nil {
			out[i].err = kind.Errorf("cacheguard: lock: renew %q: %w", batch[i].h.b.name(), err)
			continue
		}
		out[i].validUntil, out[i].err = batch[i].h.b.(pipelined).renewResult(cmds[j], start, batch[i].lease)
	}
	return left
}

// Mutex returns the exclusive lock called name. Mutexes are cheap; the
// options override the client's for this lock. An invalid name or option is
// reported by Lock and TryLock.
func (c *Client) Mutex(name string, opts ...Option) *Mutex {
	m := &Mutex{e: c.engine, cfg: c.cfg}
	m.cfg.apply(partMutex, opts)
	base, err := baseKey(m.cfg.prefix, name)
	m.cfg.errs.Add(err)
	newBackend := newMutexBackend
	if m.cfg.unfenced {
		newBackend = newUnfencedBackend
	}
	m.b = newBackend(c.rdb, name, base, base+wire.LockReleasedSuffix, base+wire.LockWaitersSuffix, c.pub, &m.cfg)
	return m
}
