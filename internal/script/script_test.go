package script_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// count adds ARGV[1] to the counter at KEYS[1] and replies the new count:
// a call that ran twice shows.
var count = redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)

// countToo is count under another SHA, for a batch of which the server
// knows one script and not the other.
var countToo = redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1]) -- too`)

// sent counts the EVALSHA and EVAL commands a client sends, plain or in a
// pipeline.
type sent struct {
	mu    sync.Mutex
	names map[string]int
}

func (s *sent) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd)
		return next(ctx, cmd)
	}
}

func (s *sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (s *sent) add(cmd redis.Cmder) {
	if n := cmd.Name(); n == "eval" || n == "evalsha" {
		s.mu.Lock()
		s.names[n]++
		s.mu.Unlock()
	}
}

// take returns the counts since the last take.
func (s *sent) take() (evalsha, eval int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evalsha, eval = s.names["evalsha"], s.names["eval"]
	s.names = map[string]int{}
	return evalsha, eval
}

func flushScripts(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error {
		return c.ScriptFlush(ctx).Err()
	})
}

// TestEveryCallRunsOnceAfterScriptFlush sends batches of script calls to a
// server that lost its script cache before each (SCRIPT FLUSH, as a
// restart or a new cluster node): every call runs, exactly once (each
// counter moves by its call's step, no more), whether the server knows
// none of the batch's scripts, all of them, or some; a call that fails
// fails alone; and a lone call sent plain falls back the same way.
func TestEveryCallRunsOnceAfterScriptFlush(t *testing.T) {
	for _, top := range redistest.Topologies() {
		t.Run(top.Name, func(t *testing.T) {
			rdb := top.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := &sent{names: map[string]int{}}
			rdb.AddHook(s)
			keys := make([]string, 8) // spread over the cluster's nodes
			for i := range keys {
				keys[i] = fmt.Sprintf("count:%d", i)
			}
			want := make([]int64, len(keys))
			// run sends one call per key (count, or countToo for the odd
			// keys when mixed) adding step, and checks every counter.
			run := func(what string, step int64, mixed bool, wantEval int) {
				t.Helper()
				calls := make([]script.Call, len(keys))
				for i, k := range keys {
					sc := count
					if mixed && i%2 == 1 {
						sc = countToo
					}
					calls[i] = script.Call{Script: sc, Keys: []string{k}, Args: []any{step}}
				}
				s.take()
				cmds, err := script.Run(ctx, rdb, calls)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(cmds) != len(calls) {
					t.Fatalf("%s: %d replies for %d calls", what, len(cmds), len(calls))
				}
				for i, k := range keys {
					want[i] += step
					if got, err := cmds[i].Int64(); err != nil || got != want[i] {
						t.Errorf("%s: call %d replied %d, %v; want %d", what, i, got, err, want[i])
					}
					if got, err := rdb.Get(ctx, k).Int64(); err != nil || got != want[i] {
						t.Errorf("%s: counter %s = %d, %v; want %d (each call run once)", what, k, got, err, want[i])
					}
				}
				if evalsha, eval := s.take(); evalsha != len(calls) || eval != wantEval {
					t.Errorf("%s: sent %d EVALSHA and %d EVAL; want %d and %d", what, evalsha, eval, len(calls), wantEval)
				}
			}
			flushScripts(t, rdb)
			run("no script known", 1, false, len(keys))
			run("script known", 10, false, 0)
			flushScripts(t, rdb)
			run("flushed again", 100, false, len(keys))
			flushScripts(t, rdb)
			if err := count.Load(ctx, rdb).Err(); err != nil { // on every master
				t.Fatal(err)
			}
			run("one of two scripts known", 1000, true, len(keys)/2)

			// A call that fails (a key of another type) fails alone.
			flushScripts(t, rdb)
			if err := rdb.Set(ctx, "count:text", "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			calls := []script.Call{
				{Script: count, Keys: []string{keys[0]}, Args: []any{1}},
				{Script: count, Keys: []string{"count:text"}, Args: []any{1}},
				{Script: count, Keys: []string{keys[1]}, Args: []any{1}},
			}
			cmds, err := script.Run(ctx, rdb, calls)
			if err == nil || cmds[1].Err() == nil || err.Error() != cmds[1].Err().Error() {
				t.Fatalf("batch with a failing call: %v (call: %v); want the call's error", err, cmds[1].Err())
			}
			want[0]++
			want[1]++
			for i, j := range []int{0, 2} {
				if got, err := cmds[j].Int64(); err != nil || got != want[i] {
					t.Errorf("call %d beside a failing one: %d, %v; want %d", j, got, err, want[i])
				}
			}

			// A lone call, plain.
			flushScripts(t, rdb)
			s.take()
			one := script.Call{Script: count, Keys: []string{keys[2]}, Args: []any{1}}
			cmd := one.EvalSha(ctx)
			script.Process(ctx, rdb, cmd, one)
			want[2]++
			if got, err := cmd.Int64(); err != nil || got != want[2] {
				t.Errorf("lone call: %d, %v; want %d", got, err, want[2])
			}
			if got, err := rdb.Get(ctx, keys[2]).Int64(); err != nil || got != want[2] {
				t.Errorf("lone call: counter %d, %v; want %d (run once)", got, err, want[2])
			}
			if evalsha, eval := s.take(); evalsha != 1 || eval != 1 {
				t.Errorf("lone call: sent %d EVALSHA and %d EVAL; want 1 and 1", evalsha, eval)
			}
		})
	}
}

// TestRetryLeavesAnsweredCallsAlone: Retry sends nothing when no call was
// refused, and no batch at all is nothing to send.
func TestRetryLeavesAnsweredCallsAlone(t *testing.T) {
	_, rdb := redistest.Single(t)
	ctx := context.Background()
	s := &sent{names: map[string]int{}}
	rdb.AddHook(s)
	if cmds, err := script.Run(ctx, rdb, nil); err != nil || len(cmds) != 0 {
		t.Fatalf("empty batch: %v, %v", cmds, err)
	}
	one := script.Call{Script: count, Keys: []string{"retry"}, Args: []any{1}}
	cmd := one.EvalSha(ctx)
	cmd.SetVal(int64(1)) // answered
	script.Retry(ctx, rdb, []script.Call{one}, []*redis.Cmd{cmd})
	if evalsha, eval := s.take(); evalsha != 0 || eval != 0 {
		t.Fatalf("sent %d EVALSHA and %d EVAL for nothing refused", evalsha, eval)
	}
	if n, _ := rdb.Exists(ctx, "retry").Result(); n != 0 {
		t.Fatal("an answered call ran again")
	}
}
