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

// RWMutex is a read-write lock: any number of readers, or one writer. Each
// reader holds its own lease (renewed by the watchdog like any lock), so a
// crashed reader frees its share within its lease.
//
// It is writer-preferring: a writer waiting in Lock marks itself in Redis,
// and readers that arrive after it queue behind it (an owner that already
// holds a read lock may still take more, or nested read locks would
// deadlock). A writer therefore gets the lock once the readers already in
// leave, however many new readers keep coming, within the longest of their
// leases. A writer that stops waiting removes its mark; one that dies leaves
// it for at most min(lease, 2 s). Upgrading a read lock to a write lock is
// refused with ErrUpgrade, while a writer may take read locks (downgrade)
// with its own owner id.
type RWMutex struct {
	e      *engine
	cfg    config
	writer backend
	reader backend
}

// RWMutex returns the read-write lock called name. Its keys differ from
// those of the Mutex of the same name: the two are different locks.
func (c *Client) RWMutex(name string, opts ...Option) *RWMutex {
	rw := &RWMutex{e: c.engine, cfg: c.cfg}
	rw.cfg.apply(partRWMutex, opts)
	base, err := baseKey(rw.cfg.prefix, name)
	rw.cfg.errs.Add(err)
	keys := []string{base + wire.LockRWSuffix, base + wire.LockReadersSuffix, base + wire.LockHoldsSuffix, base + wire.LockFenceSuffix, base + wire.LockWritersSuffix}
	channel := base + wire.LockRWSuffix + wire.LockReleasedSuffix
	// Releases of an RWMutex wake every client: all of their readers may
	// get in at once.
	writer := newHoldBackend(c.rdb, name, keys, writeAcquireScript, channel, "", c.pub, &rw.cfg)
	writer.queues = true
	rw.writer = writer
	rw.reader = &readBackend{rdb: c.rdb, lname: name, keys: keys, channelN: channel, cfg: &rw.cfg,
		args: newScriptArgs(rw.cfg.lease, c.pub.cmd, channel, c.pub.payload)}
	return rw
}

// Name returns the lock's name.
func (rw *RWMutex) Name() string { return rw.writer.name() }

// Lock takes the write lock, waiting for the writer and all readers to leave.
func (rw *RWMutex) Lock(ctx context.Context) (*Handle, error) {
	return rw.e.obtain(ctx, rw.writer, &rw.cfg, true)
}

// TryLock takes the write lock if nobody else holds the lock.
func (rw *RWMutex) TryLock(ctx context.Context) (*Handle, error) {
	return rw.e.obtain(ctx, rw.writer, &rw.cfg, false)
}

// RLock takes a read lock, waiting while another owner holds the write lock.
func (rw *RWMutex) RLock(ctx context.Context) (*Handle, error) {
	return rw.e.obtain(ctx, rw.reader, &rw.cfg, true)
}

// TryRLock takes a read lock unless another owner holds the write lock.
func (rw *RWMutex) TryRLock(ctx context.Context) (*Handle, error) {
	return rw.e.obtain(ctx, rw.reader, &rw.cfg, false)
}

// readBackend is the reader side of an RWMutex.
type readBackend struct {
	rdb      redis.UniversalClient
	lname    string
	keys     []string
	channelN string
	cfg      *config
	args     scriptArgs
}

func (b *readBackend) name() string     { return b.lname }
func (b *readBackend) id() string       { return b.keys[1] }
func (b *readBackend) channel() string  { return b.channelN }
func (b *readBackend) shared() bool     { return true }
func (b *readBackend) waitList() string { return "" }

func (b *readBackend) acquire(ctx context.Context, owner string, lease time.Duration, _ bool) (acquired, error) {
	start := time.Now()
	v, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) ([]int64, error) {
		return readAcquireScript.Run(ctx, b.rdb, b.keys, owner, b.args.leaseArg(lease)).Int64Slice()
	}, func(v []int64, err error) {
		if err == nil && len(v) > 0 && v[0] > 0 {
			b.giveBack(owner)
		}
	})
	if err != nil {
		return acquired{}, kind.Errorf("cacheguard: lock: read-acquire %q: %w", b.lname, err)
	}
	return parseAcquired(v, start, b.cfg)
}

// giveBack drops one read hold of owner that nobody will use.
func (b *readBackend) giveBack(owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.releaseTimeout())
	defer cancel()
	if err := b.release(ctx, owner, 0, false); err != nil {
		b.cfg.report.Warn("cacheguard: lock: giving back an abandoned acquisition", err, "lock", b.lname)
	}
}

func (b *readBackend) renewCall(owner string, lease time.Duration) script.Call {
	return script.Call{Script: readRenewScript, Keys: b.keys, Args: []any{owner, b.args.leaseArg(lease)}}
}

func (b *readBackend) renewResult(cmd *redis.Cmd, start time.Time, lease time.Duration) (time.Time, error) {
	n, err := cmd.Int64()
	if err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew read lock %q: %w", b.lname, err)
	}
	return b.renewed(n, start)
}

func (b *readBackend) renewed(n int64, start time.Time) (time.Time, error) {
	if n <= 0 {
		return time.Time{}, lostf("%q: the read hold is gone (expired or deleted)", b.lname)
	}
	return b.cfg.validUntil(start, n), nil
}

func (b *readBackend) renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error) {
	start := time.Now()
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) (int64, error) {
		return readRenewScript.Run(ctx, b.rdb, b.keys, owner, b.args.leaseArg(lease)).Int64()
	}, nil)
	if err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew read lock %q: %w", b.lname, err)
	}
	return b.renewed(n, start)
}

func (b *readBackend) release(ctx context.Context, owner string, _ int64, all bool) error {
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.releaseTimeout(), func(ctx context.Context) (int64, error) {
		return readReleaseScript.Run(ctx, b.rdb, b.keys,
			owner, flag(all), b.args.pubCmd, b.args.channel, b.args.payload).Int64()
	}, nil)
	if err != nil {
		return kind.Errorf("cacheguard: lock: release read lock %q: %w", b.lname, err)
	}
	if n == -1 {
		return fmt.Errorf("%w: %q (read)", ErrNotHeld, b.lname)
	}
	return nil
}

func (b *readBackend) ttl(ctx context.Context, owner string) (time.Duration, error) {
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(b.cfg.lease), func(ctx context.Context) (int64, error) {
		return readTTLScript.Run(ctx, b.rdb, b.keys, owner).Int64()
	}, nil)
	if err != nil {
		return 0, kind.Errorf("cacheguard: lock: ttl of read lock %q: %w", b.lname, err)
	}
	if n == -3 {
		return 0, fmt.Errorf("%w: %q (read)", ErrNotHeld, b.lname)
	}
	return time.Duration(n) * time.Millisecond, nil
}
