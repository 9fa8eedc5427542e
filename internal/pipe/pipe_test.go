package pipe_test

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
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
					c.SetErr(nil) // an error mark is the hook's to clear (see the package comment)
				}
			}
			return nil
		}
		return next(ctx, cmds)
	}
}

// queue puts one command of every reply type the package marks, and two it
// marks with the error (a BoolCmd, a counter's IntCmd), on p; on a fresh server every reply
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
		p.PTTL(ctx, "missing"),                    // DurationCmd: -2
		p.HGetAll(ctx, "missing"),                 // MapStringStringCmd: empty
		p.IncrBy(ctx, "counter", 0),               // IntCmd of a counter: 0
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
		if len(cmds) != 12 {
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
				if !errors.Is(cerr, errRefused) {
					t.Errorf("refused %s: error %v, want the hook's", cmd.Name(), cerr)
				}
			case serve:
				switch cmd.(type) {
				case *redis.StringCmd, *redis.BoolCmd:
					if cerr != nil {
						t.Errorf("%s served by the hook: %v", cmd.Name(), cerr)
					}
				case *redis.IntCmd:
					if cmd.Name() == "incrby" { // error-marked: this hook does not clear errors of IntCmds
						break
					}
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
		if !errors.As(cmd.Err(), &opErr) || errors.Is(cmd.Err(), pipe.ErrNoReply) {
			t.Errorf("%s on a stopped server: %v, want the connection's error alone", cmd.Name(), cmd.Err())
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

// A counter may reply any integer, the value other integer replies are
// marked with included: a DECRBY landing on math.MinInt64 is a success.
func TestCounterAtMinInt64IsAnswered(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "n", math.MinInt64+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var d *redis.IntCmd
	if _, err := pipe.Run(ctx, rdb.Pipeline(), func(p redis.Pipeliner) error {
		d = p.DecrBy(ctx, "n", 1)
		return nil
	}); err != nil || d.Err() != nil || d.Val() != math.MinInt64 {
		t.Fatalf("DECRBY to math.MinInt64 = %d, %v (Run: %v)", d.Val(), d.Err(), err)
	}
}

// A command a hook drops fails with ErrNoReply alone, not with the reply
// error of another command of its pipeline (which Exec returns): a dropped
// GET must not read as a WRONGTYPE (foreign data: a miss, and a load).
func TestDroppedCommandDoesNotTakeANeighboursReplyError(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	if err := rdb.LPush(ctx, "list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.AddHook(dropKey("dropped"))
	var wrong, dropped *redis.StringCmd
	_, err := pipe.Run(ctx, rdb.Pipeline(), func(p redis.Pipeliner) error {
		wrong, dropped = p.Get(ctx, "list"), p.Get(ctx, "dropped")
		return nil
	})
	if !redis.HasErrorPrefix(err, "WRONGTYPE") || !redis.HasErrorPrefix(wrong.Err(), "WRONGTYPE") {
		t.Fatalf("Run = %v, GET list = %v; want WRONGTYPE", err, wrong.Err())
	}
	var reply redis.Error
	if dropped.Err() != pipe.ErrNoReply || errors.As(dropped.Err(), &reply) {
		t.Fatalf("dropped GET: %v, want ErrNoReply alone", dropped.Err())
	}
}

// dropKey is a go-redis hook that drops from pipelines the commands on its
// key.
type dropKey string

func (h dropKey) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h dropKey) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h dropKey) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return next(ctx, slices.DeleteFunc(slices.Clone(cmds), func(cmd redis.Cmder) bool {
			return len(cmd.Args()) > 1 && cmd.Args()[1] == string(h)
		}))
	}
}
