package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// holdBackend runs the hold scripts against one Redis deployment: it is a
// Mutex, the writer side of an RWMutex (with a different acquire script that
// also waits for readers), or, without fencing and notifications, one node
// of a Redlock.
type holdBackend struct {
	rdb      redis.UniversalClient
	lname    string
	keys     []string // the lock key, then the acquire script's other keys
	relKeys  []string // the lock key, then the wait list if any
	acq      *redis.Script
	rel      *redis.Script // releaseScript, or the Mutex layouts'
	renewS   *redis.Script // renewScript, or mutexRenewScript for the Mutex layouts
	ttlS     *redis.Script // ttlScript, or mutexTTLScript for the Mutex layouts
	plain    bool          // the unfenced string layout (unfenced.go)
	hinted   bool          // a holder that knows its token unlocks with mutexUnlockScript
	queues   bool          // a waiting acquirer marks itself (RWMutex writer)
	channelN string        // release notifications; "" for none
	cfg      *config
	args     scriptArgs
}

// newMutexBackend is the holdBackend of a Mutex, or of one Redlock node
// (without channel and wait list): a string that keeps the fencing counter
// (mutex_scripts.go).
func newMutexBackend(rdb redis.UniversalClient, name, base, channel, waitList string, pub publisher, cfg *config) *holdBackend {
	b := newHoldBackend(rdb, name, []string{base}, acquireScript, channel, waitList, pub, cfg)
	b.rel, b.renewS, b.ttlS, b.hinted = mutexReleaseScript, mutexRenewScript, mutexTTLScript, true
	return b
}

func newHoldBackend(rdb redis.UniversalClient, name string, keys []string, acq *redis.Script,
	channel, waitList string, pub publisher, cfg *config) *holdBackend {
	relKeys := keys[:1]
	if waitList != "" {
		relKeys = []string{keys[0], waitList}
	}
	return &holdBackend{
		rdb: rdb, lname: name, keys: keys, relKeys: relKeys, acq: acq, rel: releaseScript,
		renewS: renewScript, ttlS: ttlScript,
		channelN: channel, cfg: cfg,
		args: newScriptArgs(cfg.lease, pub.cmd, channel, pub.payload),
	}
}

func (b *holdBackend) name() string    { return b.lname }
func (b *holdBackend) id() string      { return b.keys[0] }
func (b *holdBackend) channel() string { return b.channelN }
func (b *holdBackend) shared() bool    { return false }

func (b *holdBackend) waitList() string {
	if len(b.relKeys) > 1 {
		return b.relKeys[1]
	}
	return ""
}

func (b *holdBackend) acquire(ctx context.Context, owner string, lease time.Duration, waiting bool) (acquired, error) {
	if b.plain {
		return b.acquireUnfenced(ctx, owner, lease)
	}
	start := time.Now()
	// ARGV[3]: a writer that will wait marks its place for that long; a
	// Mutex acquirer that will wait marks the lock as waited for (and one
	// that will not sends nothing).
	args := []any{owner, b.args.leaseArg(lease), argOne}
	switch {
	case b.queues && waiting:
		args[2] = ms(b.cfg.markTTL())
	case b.queues:
		args[2] = argZero
	case !waiting:
		args = args[:2]
	}
	v, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) ([]int64, error) {
		return acquireReply(b.acq.Run(ctx, b.rdb, b.keys, args...), ms(lease))
	}, func(v []int64, err error) {
		if err == nil && len(v) > 1 && v[0] > 0 {
			// The caller gave up before this hold came back: give it back.
			b.giveBack(owner, v[1])
		}
	})
	if err != nil {
		return acquired{}, kind.Errorf("cacheguard: lock: acquire %q: %w", b.lname, err)
	}
	return parseAcquired(v, start, b.cfg)
}

// giveBack drops one hold of owner that nobody will use, if the lock is
// still the one that granted it (same token).
func (b *holdBackend) giveBack(owner string, token int64) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.releaseTimeout())
	defer cancel()
	if err := b.releaseHold(ctx, owner, false, token, true); err != nil && !errors.Is(err, ErrNotHeld) {
		b.cfg.report.Warn("cacheguard: lock: giving back an abandoned acquisition", err, "lock", b.lname)
	}
}

// acquireReply reads the reply of an acquire script: a table, or for a free
// Mutex taken (acquireScript) its fencing token alone, which stands for
// {1, token, lease}.
func acquireReply(cmd *redis.Cmd, lease int64) ([]int64, error) {
	if token, ok := cmd.Val().(int64); ok && cmd.Err() == nil {
		return []int64{1, token, lease}, nil
	}
	return cmd.Int64Slice()
}

// parseAcquired reads the reply of an acquire script: {holds, token, pttl}
// when granted, {0, pttl of the holder} when refused, {-1, 0} for an
// upgrade. The holder trusts the lock for the lease Redis reports it holds
// now, counted from when the request was sent, less the drift allowance.
func parseAcquired(v []int64, start time.Time, cfg *config) (acquired, error) {
	if len(v) < 2 {
		return acquired{}, fmt.Errorf("cacheguard: lock: unexpected acquire reply %v", v)
	}
	if v[0] < 0 {
		return acquired{}, ErrUpgrade
	}
	if v[0] == 0 {
		return acquired{wait: time.Duration(v[1]) * time.Millisecond, start: start}, nil
	}
	if len(v) != 3 {
		return acquired{}, fmt.Errorf("cacheguard: lock: unexpected acquire reply %v", v)
	}
	return acquired{
		holds:      v[0],
		token:      v[1],
		start:      start,
		validUntil: cfg.validUntil(start, v[2]),
	}, nil
}

func (b *holdBackend) renewCall(owner string, lease time.Duration) script.Call {
	return script.Call{Script: b.renewS, Keys: b.keys[:1], Args: []any{owner, b.args.leaseArg(lease)}}
}

func (b *holdBackend) renewResult(cmd *redis.Cmd, start time.Time, lease time.Duration) (time.Time, error) {
	n, err := cmd.Int64()
	if err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew %q: %w", b.lname, err)
	}
	return b.renewed(n, start)
}

func (b *holdBackend) renewed(n int64, start time.Time) (time.Time, error) {
	switch {
	case n > 0:
		return b.cfg.validUntil(start, n), nil
	case n == 0:
		return time.Time{}, lostf("%q: the lock key is gone (expired or deleted)", b.lname)
	default:
		return time.Time{}, lostf("%q: another owner holds the lock", b.lname)
	}
}

func (b *holdBackend) renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error) {
	start := time.Now()
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) (int64, error) {
		return b.renewS.Run(ctx, b.rdb, b.keys[:1], owner, b.args.leaseArg(lease)).Int64()
	}, nil)
	if err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew %q: %w", b.lname, err)
	}
	return b.renewed(n, start)
}

func (b *holdBackend) release(ctx context.Context, owner string, token int64, all bool) error {
	return b.releaseHold(ctx, owner, all, token, false)
}

// releaseHold is release; with only set, limited to the hold with fencing
// token token.
func (b *holdBackend) releaseHold(ctx context.Context, owner string, all bool, token int64, only bool) error {
	script, args := b.rel, []any{owner, flag(all), b.args.pubCmd, b.args.channel, b.args.payload, argEmpty}
	if only {
		args[5] = strconv.FormatInt(token, 10)
	}
	if b.hinted && token > 0 && !all && !only && (len(b.relKeys) > 1 || b.args.pubCmd == "") {
		// The Mutex string while owner holds it once, and once released.
		script = mutexUnlockScript
		held, freed := wire.LockHeldOnce(token, owner)
		args = append(args[:0], held, freed)
		if b.args.pub != nil {
			args = append(args, b.args.pub)
		}
	}
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.releaseTimeout(), func(ctx context.Context) (int64, error) {
		return script.Run(ctx, b.rdb, b.relKeys, args...).Int64()
	}, nil)
	if err != nil {
		return kind.Errorf("cacheguard: lock: release %q: %w", b.lname, err)
	}
	if n < 0 {
		return fmt.Errorf("%w: %q", ErrNotHeld, b.lname)
	}
	return nil
}

func (b *holdBackend) ttl(ctx context.Context, owner string) (time.Duration, error) {
	n, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(b.cfg.lease), func(ctx context.Context) (int64, error) {
		return b.ttlS.Run(ctx, b.rdb, b.keys[:1], owner).Int64()
	}, nil)
	if err != nil {
		return 0, kind.Errorf("cacheguard: lock: ttl %q: %w", b.lname, err)
	}
	if n == -3 {
		return 0, fmt.Errorf("%w: %q", ErrNotHeld, b.lname)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// giveUp removes the mark a waiting writer left (see writersLua) when it
// stops waiting without the lock, waking the readers queued behind it.
func (b *holdBackend) giveUp(ctx context.Context, owner string) {
	if !b.queues {
		return
	}
	err := call.Err(b.cfg.calls, ctx, b.cfg.releaseTimeout(), func(ctx context.Context) error {
		return writerGivesUpScript.Run(ctx, b.rdb, b.keys[4:5], owner, b.args.pubCmd, b.args.channel, b.args.payload).Err()
	})
	if err != nil {
		b.cfg.report.Warn("cacheguard: lock: removing a waiting writer's mark", err, "lock", b.lname)
	}
}
