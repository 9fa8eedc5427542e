package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// heldReads holds every plain GET of the test's keys until release is
// closed (held receives one value per GET it holds) and counts the round
// trips of the test's GETs; a pipelined GET of failKey gets an error reply.
type heldReads struct {
	rt      roundTrips
	held    chan struct{}
	release chan struct{}
	plain   atomic.Int64
	pipes   atomic.Int64
	failKey string
}

var errInjectedReply = errors.New("ERR injected reply")

func (h *heldReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *heldReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" && h.rt.ours(cmd) {
			h.plain.Add(1)
			h.held <- struct{}{}
			<-h.release
		}
		return next(ctx, cmd)
	}
}
func (h *heldReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) }) {
			return next(ctx, cmds)
		}
		h.pipes.Add(1)
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if cmd.Name() == "get" && cmd.Args()[1] == h.failKey {
				cmd.SetErr(errInjectedReply)
			}
		}
		return err
	}
}

// holdTwoReads fills keys (one slot, so one node's queue), installs a
// heldReads hook on rdb and has two Gets hold both reads a node sends
// without queueing; it returns the hook and the two Gets' answers.
func holdTwoReads(t *testing.T, rdb redis.UniversalClient, c *Cache[string], keys []string) (*heldReads, []chan getAnswer) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		if err := c.Set(ctx, k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	h := &heldReads{rt: roundTrips{prefix: prefixFor(t)}, held: make(chan struct{}, transport.ReadsInFlight), release: make(chan struct{})}
	rdb.AddHook(h)
	var answers []chan getAnswer
	for i := range transport.ReadsInFlight {
		ch := make(chan getAnswer, 1)
		answers = append(answers, ch)
		go func() {
			v, err := c.Get(ctx, keys[i], noLoad)
			ch <- getAnswer{v, err}
		}()
		recvOr(t, h.held, "a held read")
	}
	return h, answers
}

// waitQueued waits until n reads wait in the queue of rkey's node.
func waitQueued(t *testing.T, c *Cache[string], rkey string, n int) {
	t.Helper()
	q := c.redis.NodeOf(context.Background(), rkey)
	waitFor(t, func() bool { return q.WaitingReads() == n })
}

// getEach starts a Get of each key; the channels give their answers.
func getEach(c *Cache[string], ctx context.Context, keys []string) []chan getAnswer {
	out := make([]chan getAnswer, len(keys))
	for i, k := range keys {
		out[i] = make(chan getAnswer, 1)
		go func() {
			v, err := c.Get(ctx, k, noLoad)
			out[i] <- getAnswer{v, err}
		}()
	}
	return out
}

// noLoad is the loader of keys that are in Redis: a load is a wrong answer.
func noLoad(context.Context, string) (string, error) { return "loaded", nil }

func batchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{q}k%d", i)
	}
	return keys
}

// While a node's reads are under way, Gets of other keys queue and go out
// together as one pipeline when a read returns; each gets its own value.
func TestQueuedReadsShareOneRoundTrip(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 10)
		h, held := holdTwoReads(t, rdb, c, keys)
		queued := getEach(c, context.Background(), keys[transport.ReadsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 10)
		close(h.release)
		for i, ch := range slices.Concat(held, queued) {
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		if p, q := h.plain.Load(), h.pipes.Load(); p != transport.ReadsInFlight || q != 1 {
			t.Errorf("%d plain GETs and %d pipelines; want %d and 1", p, q, transport.ReadsInFlight)
		}
		checkFlightsIdle(t, c)
	})
}

// A queued Get whose context ends leaves the queue with its context's
// error at once, while the reads under way are still held; the others get
// their values. A GET that fails in a pipeline fails its own caller only.
func TestQueuedReadLeavesOnContextEndAndFailsAlone(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 3)
		h, held := holdTwoReads(t, rdb, c, keys)
		h.failKey = prefixFor(t) + keys[transport.ReadsInFlight+2]
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		left := make(chan getAnswer, 1)
		go func() {
			v, err := c.Get(ctx, keys[transport.ReadsInFlight], noLoad)
			left <- getAnswer{v, err}
		}()
		rest := getEach(c, context.Background(), keys[transport.ReadsInFlight+1:])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		cancel()
		if a := recvOr(t, left, "the cancelled Get"); !errors.Is(a.err, context.Canceled) {
			t.Errorf("cancelled Get = %q, %v; want context.Canceled while the reads are held", a.v, a.err)
		}
		waitQueued(t, c, prefixFor(t)+keys[0], 2)
		close(h.release)
		for i, ch := range held {
			if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
				t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
			}
		}
		if a := recvOr(t, rest[0], "a queued Get"); a.err != nil || a.v != "v-"+keys[transport.ReadsInFlight+1] {
			t.Errorf("queued Get = %q, %v", a.v, a.err)
		}
		if a := recvOr(t, rest[1], "the failing Get"); !errors.Is(a.err, ErrRedis) || !errors.Is(a.err, errInjectedReply) {
			t.Errorf("failing Get = %q, %v; want ErrRedis with the injected reply", a.v, a.err)
		}
		checkFlightsIdle(t, c)
	})
}

// Reads queued for a node whose slot moves to another node meanwhile go out
// to the old node in a pipeline, are answered MOVED and follow the slot:
// every caller gets its value.
func TestQueuedReadsFollowAMovedSlot(t *testing.T) {
	redistest.NeedServer(t)
	cl, rdb := redistest.StartCluster(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 5)
	h, held := holdTwoReads(t, rdb, c, keys)
	queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
	waitQueued(t, c, prefixFor(t)+keys[0], 5)
	slot, err := rdb.(*redis.ClusterClient).ClusterKeySlot(ctx, prefixFor(t)+keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if owner, err := cl.MigrateSlot(ctx, int(slot), 0); err != nil {
		t.Fatal(err)
	} else if owner == 0 {
		if _, err := cl.MigrateSlot(ctx, int(slot), 1); err != nil {
			t.Fatal(err)
		}
	}
	close(h.release)
	for i, ch := range slices.Concat(held, queued) {
		if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v after its slot moved", keys[i], a.v, a.err)
		}
	}
	if q := h.pipes.Load(); q < 1 {
		t.Errorf("%d pipelines; the queued reads were not batched", q)
	}
}
