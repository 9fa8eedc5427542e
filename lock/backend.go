package lock

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// backend is the Redis side of one kind of lock: how to take, renew, release
// and inspect it for a given owner. Mutex, the two halves of RWMutex and
// Redlock each have one; the waiting, the watchdog and the handles are shared.
type backend interface {
	// acquire takes the lock for owner or adds a reentrant hold. waiting
	// says the caller will wait for the lock if refused (a writer then
	// queues ahead of new readers).
	acquire(ctx context.Context, owner string, lease time.Duration, waiting bool) (acquired, error)
	// renew resets the lease to lease. It returns how long the holder may
	// trust the lock, or an error matching ErrLost when the lock is
	// definitely no longer owner's.
	renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error)
	// release drops one hold (all of them if all is set). It returns
	// ErrNotHeld if owner did not hold it. token is the fencing token the
	// caller holds the lock with, 0 when it does not know it: a hint that
	// may make the release cheaper, never a condition of it.
	release(ctx context.Context, owner string, token int64, all bool) error
	// ttl returns the remaining lease, or ErrNotHeld.
	ttl(ctx context.Context, owner string) (time.Duration, error)
	// name is the lock's name; id is unique per lock and kind.
	name() string
	id() string
	// channel is the pub/sub channel announcing releases, "" for none.
	channel() string
	// shared reports whether holders of this kind coexist (read locks):
	// a release then wakes all of its waiters rather than one.
	shared() bool
	// waitList is the key where clients with waiters register, so that a
	// release wakes one of them rather than all; "" to wake every client.
	waitList() string
}

// acquired is the outcome of one acquisition attempt.
type acquired struct {
	holds  int64         // hold count after the attempt; 0 when refused
	token  int64         // fencing token of the hold
	tokens []int64       // a MultiLock's: the token of each lock (token is 0)
	wait   time.Duration // when refused: remaining lease of the holder, <0 unknown
	// validUntil is how long the holder may trust the lock: the time the
	// attempt started plus the lease minus the drift allowance.
	validUntil time.Time
	start      time.Time
	// why, when refused, says more than "held by another owner" (Redlock:
	// how many nodes granted it and what the others said).
	why error
}

// pipelined is implemented by single-Redis backends whose renewals the
// watchdog can send in one pipeline.
type pipelined interface {
	// renewCall is the script call that renews owner's hold to lease.
	renewCall(owner string, lease time.Duration) script.Call
	renewResult(cmd *redis.Cmd, start time.Time, lease time.Duration) (time.Time, error)
}

// publisher says how releases are announced on one Redis deployment.
type publisher struct {
	cmd     string // "spublish" on a cluster, "publish" otherwise
	payload string // the releasing client's id
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// scriptArgs holds the script arguments of one lock converted to interface
// values once, so that calls do not allocate them again.
type scriptArgs struct {
	lease   time.Duration
	leaseMS any // ms(lease)
	pubCmd  any // "" when releases are not announced
	channel any
	payload any
	// pub is pubCmd and payload in one, "<command>|<payload>", nil when
	// releases are not announced (mutexUnlockScript).
	pub any
}

func newScriptArgs(lease time.Duration, pubCmd, channel, payload string) scriptArgs {
	if channel == "" {
		pubCmd = ""
	}
	a := scriptArgs{lease: lease, leaseMS: ms(lease), pubCmd: pubCmd, channel: channel, payload: payload}
	if pubCmd != "" {
		a.pub = pubCmd + "|" + payload
	}
	return a
}

// leaseArg returns d in milliseconds as a script argument.
func (a *scriptArgs) leaseArg(d time.Duration) any {
	if d == a.lease {
		return a.leaseMS
	}
	return ms(d)
}

var argOne, argZero, argEmpty any = "1", "0", ""

func flag(b bool) any {
	if b {
		return argOne
	}
	return argZero
}
