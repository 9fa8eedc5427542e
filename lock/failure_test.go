package lock

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replyLost is a go-redis hook that lets a matching command run on the
// server and then reports a lost reply, as a connection dropping after the
// write would.
type replyLost struct {
	match func(cmd redis.Cmder) bool
	after func() // runs after the command, before the error is returned
	n     atomic.Int64
}

func (h *replyLost) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *replyLost) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *replyLost) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.match(cmd) && h.n.Add(1) == 1 {
			if h.after != nil {
				h.after()
			}
			cmd.SetErr(io.ErrUnexpectedEOF)
			return io.ErrUnexpectedEOF
		}
		return err
	}
}

// isAcquire matches the EVALSHA (or EVAL) of the mutex acquire script.
func isAcquire(cmd redis.Cmder) bool {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	return (name == "evalsha" && args[1] == acquireScript.Hash()) || (name == "eval" && fmt.Sprintf("%x", sha1.Sum([]byte(args[1].(string)))) == acquireScript.Hash())
}

// TestLostReplyReleases: the acquire script ran but its reply was lost. The
// caller gets the error, and the lock it may have taken is released instead
// of blocking everyone for a whole lease.
func TestLostReplyReleases(t *testing.T) {
	s, _ := redistestSingle(t)
	ctx := testCtx(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	rdb.AddHook(&replyLost{match: isAcquire})
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Mutex("lost-reply").TryLock(ctx)
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrNotObtained) {
		t.Fatalf("err = %v, want the connection error", err)
	}
	c.Close() // waits for the cleanup
	if heldIn(ctx, s.Client(), "cacheguard:lock:{lost-reply}") {
		t.Fatal("the lock taken by the lost call is still held")
	}
}

// TestCloseDuringAcquire: the client is closed while an acquisition is on
// the wire. The lock it obtained is given back and the caller told.
func TestCloseDuringAcquire(t *testing.T) {
	s, _ := redistestSingle(t)
	ctx := testCtx(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	var c *Client
	hook := &closeAfter{match: isAcquire, close: func() { c.Close() }}
	rdb.AddHook(hook)
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex("closing-acquire").Lock(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if heldIn(ctx, s.Client(), "cacheguard:lock:{closing-acquire}") {
		t.Fatal("the lock obtained during Close is still held")
	}
}

// closeAfter closes the client once a matching command has run.
type closeAfter struct {
	match func(cmd redis.Cmder) bool
	close func()
	once  atomic.Bool
}

func (h *closeAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *closeAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *closeAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && h.match(cmd) && h.once.CompareAndSwap(false, true) {
			h.close()
		}
		return err
	}
}

// testExtendLost: Extend finds the lock gone, says so, and ends the hold.
func testExtendLost(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
	h, err := c.Mutex("extend-lost").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "cacheguard:lock:{extend-lost}")
	err = h.Extend(ctx, time.Hour)
	if !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrLost) {
		t.Fatalf("extend of a deleted lock: %v", err)
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, ErrLost) {
		t.Fatalf("cause %v", cause)
	}
	if _, err := h.TTL(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("ttl: %v", err)
	}
}
