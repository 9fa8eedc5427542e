package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
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
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidOption)
	}
	cfg := defaultConfig()
	cfg.apply(opts)
	if cfg.errs.Err() != nil {
		return nil, cfg.errs.Err()
	}
	id := newOwner()
	c := &Client{rdb: rdb, cfg: cfg}
	ntf := newNotifier(rdb, id, cfg.logger)
	c.pub = publisher{cmd: ntf.publishCmd(), payload: id}
	c.engine = newEngine(cfg.logger, ntf, c.renewBatch)
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
// their leases unless unlocked. Close does not close the Redis client.
func (c *Client) Close() error {
	c.engine.close()
	return nil
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
	todo := make([]int, len(batch))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; attempt < 2 && len(todo) > 0; attempt++ {
		todo = c.renewPipelined(ctx, batch, out, todo)
	}
	for _, i := range todo {
		// Still no script, or not pipelinable: one call each.
		r := batch[i]
		out[i].validUntil, out[i].err = r.h.b.renew(ctx, r.h.owner, r.lease)
	}
	return out
}

// renewPipelined renews batch[i] for i in todo in one pipeline and returns
// the ones that met a script cache without the script (after loading it
// again) or that cannot be pipelined.
func (c *Client) renewPipelined(ctx context.Context, batch []renewReq, out []renewal, todo []int) []int {
	p := c.rdb.Pipeline()
	cmds := make(map[int]*redis.Cmd, len(todo))
	var left []int
	start := time.Now()
	for _, i := range todo {
		if pb, ok := batch[i].h.b.(pipelined); ok {
			cmds[i] = pb.queueRenew(ctx, p, batch[i].h.owner, batch[i].lease)
		} else {
			left = append(left, i)
		}
	}
	// Errors are read per command below. A pipeline abandoned at the
	// deadline fails every renewal in it (transient: retried).
	if err := call.Err(c.cfg.calls, ctx, 0, func(ctx context.Context) error {
		_, _ = pipe.Exec(ctx, p) // a renewal left unanswered fails: pipe.ErrNoReply
		return nil
	}); err != nil {
		for _, i := range todo {
			if _, ok := cmds[i]; ok {
				out[i].err = fmt.Errorf("cacheguard: lock: renew %q: %w", batch[i].h.b.name(), err)
			}
		}
		return left
	}
	missing := map[*redis.Script]bool{}
	for _, i := range todo {
		cmd, ok := cmds[i]
		if !ok {
			continue
		}
		p := batch[i].h.b.(pipelined)
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			// The script cache was flushed, or this node never saw the
			// script: load it (on every node) and renew these again.
			missing[p.renewScript()] = true
			left = append(left, i)
			continue
		}
		out[i].validUntil, out[i].err = p.renewResult(cmd, start, batch[i].lease)
	}
	for s := range missing {
		if err := s.Load(ctx, c.rdb).Err(); err != nil {
			c.logger.Warn("cacheguard: lock: loading a script", "err", err)
		}
	}
	return left
}

// Mutex returns the exclusive lock called name. Mutexes are cheap; the
// options override the client's for this lock. An invalid name or option is
// reported by Lock and TryLock.
func (c *Client) Mutex(name string, opts ...Option) *Mutex {
	m := &Mutex{e: c.engine, cfg: c.cfg}
	m.cfg.apply(opts)
	base, err := baseKey(m.cfg.prefix, name)
	m.cfg.errs.Add(err)
	newBackend := newMutexBackend
	if m.cfg.unfenced {
		newBackend = newUnfencedBackend
	}
	m.b = newBackend(c.rdb, name, base, base+wire.LockReleasedSuffix, base+wire.LockWaitersSuffix, c.pub, &m.cfg)
	return m
}
