package pipe_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// What the hook below does to every pipeline.
const (
	send    = iota // sends it
	drop           // drops every command and reports nothing
	refuse         // sends nothing and returns errRefused
	serve          // sends nothing and sets every command's value itself
	tx             // the same as send (the test runs a transaction)
	numHook = tx
)

var errRefused = errors.New("refused by a hook")

type hook struct{ mode atomic.Int32 }

func (h *hook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		switch h.mode.Load() {
		case drop:
			return nil
		case refuse:
			return errRefused
		case serve:
			for _, cmd := range cmds {
				switch c := cmd.(type) {
				case *redis.StringCmd:
					c.SetVal("served")
				case *redis.IntCmd:
					c.SetVal(7)
				case *redis.BoolCmd:
					c.SetVal(true)
					c.SetErr(nil)
				}
			}
			return nil
		}
		return next(ctx, cmds)
	}
}

// queue puts one command of every reply type the package marks, and one it
// marks with the error (a BoolCmd), on p; on a fresh server every reply
// is empty or zero, the replies closest to a mark.
func queue(ctx context.Context, p redis.Pipeliner) []redis.Cmder {
	return []redis.Cmder{
		p.Get(ctx, "missing"),                     // StringCmd: redis.Nil
		p.Set(ctx, "k", "", time.Minute),          // StatusCmd
		p.Do(ctx, "GET", "k"),                     // Cmd
		p.Del(ctx, "missing"),                     // IntCmd: 0
		p.IncrByFloat(ctx, "f", 0),                // FloatCmd: 0
		p.ZRangeWithScores(ctx, "missing", 0, -1), // ZSliceCmd: empty
		p.LRange(ctx, "missing", 0, -1),           // StringSliceCmd: empty
		p.HMGet(ctx, "missing", "a"),              // SliceCmd: [nil]
		p.Expire(ctx, "missing", time.Minute),     // BoolCmd: false
	}
}

// Each kind of command a pipeline answers, even with an empty reply or an
// error reply, reads as answered; each one a hook drops, or a pipeline a
// hook refuses, fails with ErrNoReply (wrapping the hook's error); a value
// a hook sets itself stands.
func TestUnansweredCommandsFail(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	h := &hook{}
	rdb.AddHook(h)
	for mode := range numHook + 1 {
		h.mode.Store(int32(mode))
		p := rdb.Pipeline()
		if mode == tx {
			p = rdb.TxPipeline()
		}
		cmds, err := pipe.Run(ctx, p, func(p redis.Pipeliner) error {
			queue(ctx, p)
			return nil
		})
		if len(cmds) != 9 {
			t.Fatalf("mode %d: %d commands", mode, len(cmds))
		}
		for _, cmd := range cmds {
			cerr := cmd.Err()
			switch mode {
			case send, tx:
				if errors.Is(cerr, pipe.ErrNoReply) {
					t.Errorf("mode %d: %s answered, yet failed: %v", mode, cmd.Name(), cerr)
				}
			case drop:
				if cerr != pipe.ErrNoReply {
					t.Errorf("dropped %s: error %v, want ErrNoReply", cmd.Name(), cerr)
				}
			case refuse:
				if !errors.Is(cerr, pipe.ErrNoReply) || !errors.Is(cerr, errRefused) {
					t.Errorf("refused %s: error %v, want ErrNoReply and the hook's", cmd.Name(), cerr)
				}
			case serve:
				switch cmd.(type) {
				case *redis.StringCmd, *redis.IntCmd, *redis.BoolCmd:
					if cerr != nil {
						t.Errorf("%s served by the hook: %v", cmd.Name(), cerr)
					}
				default:
					if !errors.Is(cerr, pipe.ErrNoReply) {
						t.Errorf("%s left alone by the serving hook: %v, want ErrNoReply", cmd.Name(), cerr)
					}
				}
			}
		}
		switch mode {
		case drop:
			if err != pipe.ErrNoReply {
				t.Errorf("Run with every command dropped = %v, want ErrNoReply", err)
			}
		case refuse:
			if !errors.Is(err, errRefused) {
				t.Errorf("Run refused = %v", err)
			}
		case send, tx:
			if !errors.Is(err, redis.Nil) { // the first command's reply
				t.Errorf("Run = %v, want redis.Nil (the first GET's)", err)
			}
		}
	}
}

// A pipeline to a dead server fails every command with the connection's
// error: the mark does not hide it, even on a command marked with an error.
func TestServerGoneFailsEveryCommand(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	cmds, err := pipe.Run(ctx, rdb.Pipeline(), func(p redis.Pipeliner) error {
		queue(ctx, p)
		return nil
	})
	if err == nil {
		t.Fatal("Run on a stopped server succeeded")
	}
	for _, cmd := range cmds {
		var opErr *net.OpError
		if !errors.As(cmd.Err(), &opErr) {
			t.Errorf("%s on a stopped server: %v, want the connection's error", cmd.Name(), cmd.Err())
		}
	}
}

// An error of fn sends nothing and is returned.
func TestRunReturnsFnError(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	boom := errors.New("boom")
	cmds, err := pipe.Run(ctx, rdb.Pipeline(), func(p redis.Pipeliner) error {
		p.Set(ctx, "never", "x", 0)
		return boom
	})
	if err != boom || cmds != nil {
		t.Fatalf("Run = %v, %v; want boom", cmds, err)
	}
	if n := rdb.Exists(ctx, "never").Val(); n != 0 {
		t.Fatal("fn's command was sent")
	}
}
