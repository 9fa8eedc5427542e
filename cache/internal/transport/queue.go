package transport

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// The engine's single-key commands share round trips: its GETs, the lease
// attempts (SET NX GET) and fills (a script by SHA) of a Get, and a lone
// key's Set and Delete. Each Redis node (the single server, the master of a
// failover client, each master of a cluster, each shard of a ring) has two
// queues: one for its reads (the GETs) and one for its writes (every other
// command), so that writes a server holds back (CLIENT PAUSE WRITE, as a
// failover does) never hold a read. A command goes out at once, as one
// plain command, while fewer commands of its queue than its width are
// under way: a lone caller pays one round trip and nothing else. Otherwise
// it waits in the queue, and when a command of the queue ends, everything
// queued goes out together as one pipeline (at most MaxReadBatch commands;
// the rest go in the next one), so N concurrent callers cost about one
// round trip per batch instead of one connection each. A script answered
// NOSCRIPT (the server lost its script cache) is sent again with its body,
// in one more pipeline or, alone, as a plain EVAL (internal/script):
// a script that ran never runs twice.
//
// A caller whose context ends while its command waits leaves at once with
// its context's error (a command already sent for it in a pipeline is left
// to finish, its reply dropped; a command not yet sent never is); the
// others are not affected. A read sent plain ends by its context on any
// client too (sendCmd).
//
// A read counts against its queue until its reply comes or its caller
// leaves, whichever is first: a plain read whose caller left goes on alone,
// on a goroutine counted for Close, and a pipeline of reads once every
// caller of it has left; the queue's next commands go out meanwhile, so
// reads never wait behind reads nobody waits for. Each of those holds a
// connection until its reply comes or the client's own timeouts end it
// (ReadTimeout, retried MaxRetries times); how many a node can hold at once
// is bounded by the client's pool (PoolSize per node: past it go-redis
// makes a command wait PoolTimeout for a connection). A write counts until
// its reply comes, whoever waits for it (a fill's outcome is needed even
// after its callers left, and a write that landed must invalidate): the
// writes of a node hold at most ReadsInFlight connections, however long
// the server holds them back.
//
// A command that fails in a pipeline fails only its own caller; a
// connection failure fails the callers whose commands were on it, each
// counted by the breaker as its own failure. On a cluster the pipeline
// follows MOVED and ASK replies as any go-redis pipeline does; the queues a
// key joins are its slot's master's at the time it is sent (nodes.go),
// which only groups the commands: where they go is the client's routing
// (replicas included). go-redis hooks see each queued command, by its own
// name, in a pipeline.

const (
	// ReadsInFlight is how many commands of a queue of writes go out
	// without queueing, and the narrowest a queue of reads gets (width.go):
	// two, so that one slow reply (a big value, a stalled connection) does
	// not hold every other command of its node, and so that one batch is
	// built and decoded while the other is on the wire.
	ReadsInFlight = 2
	// MaxReadBatch bounds one pipeline of queued commands, and with it the
	// memory a burst of callers holds in one round trip.
	MaxReadBatch = 512
)

// cmdQueue is one kind of a node's commands: those under way and those
// waiting for them.
type cmdQueue struct {
	mu      sync.Mutex
	busy    int   // commands under way (plain or a pipeline) that count
	width   width // how many may be under way (width.go)
	waiting []*queued
}

// free tells whether a command may go out at once; q.mu is held.
func (q *cmdQueue) free() bool {
	return q.busy < q.width.of() && len(q.waiting) == 0
}

// queued is one caller's command waiting in a queue or sent in a batch.
// Its reply is written into cmd, which its caller reads once done is
// signalled, and never after leaving on its context's end.
type queued struct {
	cmd      redis.Cmder
	script   *script.Call    // non-nil: cmd is this script's EVALSHA (a *redis.Cmd)
	ctx      context.Context // the caller's, for its values
	deadline time.Time       // the caller's, zero if none
	start    time.Duration   // when its caller asked (since)
	done     chan struct{}
	sent     *sentBatch // the batch it went out in (under its queue's mu)
}

// sentBatch is a pipeline of queued commands under way. It counts against
// its queue until its replies come or, in a queue of reads, every caller of
// it has left; whichever is first gives its place back (ended).
type sentBatch struct {
	cmds    []*queued
	callers int  // callers still waiting for its replies (under the queue's mu)
	ended   bool // its place was given back (under the queue's mu)
	// starts is the sum of its commands' starts. It wraps after months of
	// uptime, harmlessly: only n×now − starts is used, which fits.
	starts time.Duration
}

var queuedCmds = sync.Pool{New: func() any { return &queued{done: make(chan struct{}, 1)} }}

// leave takes g, whose caller's context ended, out of q if it waits there.
// If it was sent, and read, and it was the last caller its batch waited
// for, the batch's place goes back: leave returns the next batch to send
// (nil if none waits).
func (q *cmdQueue) leave(g *queued, read bool) *sentBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.waiting, g); i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
		return nil
	}
	b := g.sent
	if b.callers--; !read || b.callers > 0 || b.ended {
		return nil
	}
	b.ended = true
	return q.takeLocked()
}

// take takes the next batch of q's waiting commands in the place of a
// plain command that ended, or, when none waits, gives that place back and
// returns nil. A read that was asked for at start is measured (width.go);
// widest bounds the width.
func (q *cmdQueue) take(read bool, start time.Duration, widest int) *sentBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	if read {
		q.width.observe(since()-start, 1, widest)
	}
	return q.takeLocked()
}

// next is take once b's replies came; nil if b's place was given back
// already (every caller of it left).
func (q *cmdQueue) next(b *sentBatch, read bool, widest int) *sentBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	if b.ended {
		return nil
	}
	b.ended = true
	if read {
		n := len(b.cmds)
		q.width.observe(time.Duration(n)*since()-b.starts, n, widest)
	}
	return q.takeLocked()
}

// takeLocked is take; q.mu is held. A place beyond the queue's width (it
// narrowed while the place was under way) goes back even if commands wait:
// the places within the width take them.
func (q *cmdQueue) takeLocked() *sentBatch {
	if len(q.waiting) == 0 || q.busy > q.width.of() {
		q.busy--
		return nil
	}
	n := min(len(q.waiting), MaxReadBatch)
	b := &sentBatch{cmds: slices.Clone(q.waiting[:n]), callers: n}
	for _, g := range b.cmds {
		g.sent = b
		b.starts += g.start
	}
	q.waiting = slices.Delete(q.waiting, 0, n)
	return b
}
