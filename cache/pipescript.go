package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// scriptCall is one run of a Lua script, alone or inside a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// evalSha is sc's EVALSHA command, not sent yet (as go-redis's EvalSha
// builds it: its first key at 3, for a cluster's routing).
func (sc scriptCall) evalSha(ctx context.Context) *redis.Cmd {
	args := make([]any, 0, 3+len(sc.keys)+len(sc.args))
	args = append(args, "evalsha", sc.script.Hash(), len(sc.keys))
	for _, k := range sc.keys {
		args = append(args, k)
	}
	cmd := redis.NewCmd(ctx, append(args, sc.args...)...)
	if len(sc.keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// runScripts sends calls in one pipeline by SHA (EVALSHA), so a batch does
// not carry every script's body; the calls answered NOSCRIPT are sent again
// with it (evalAgain). It returns one Cmd per call, in order, and the first
// error among them, as Pipelined does.
func runScripts(ctx context.Context, rdb redis.UniversalClient, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds, nil
	}
	for i, sc := range calls {
		cmds[i] = sc.evalSha(ctx)
	}
	_ = pipe.Send(ctx, rdb.Pipeline(), cmds) // each command carries its own error
	evalAgain(ctx, rdb, calls, cmds)
	return cmds, firstErr(cmds)
}

// runScripts runs calls as the package's runScripts does; a lone call goes
// through the queue of its key's node (readbatch.go), sharing a round trip
// with the other single-key commands under way there (or, sent alone, as
// go-redis's Script.Run: EVALSHA, then EVAL on NOSCRIPT).
func (c *Cache[V]) runScripts(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) != 1 || len(calls[0].keys) != 1 {
		return runScripts(ctx, c.rdb, calls)
	}
	cmd := calls[0].evalSha(ctx)
	if err := c.send(ctx, calls[0].keys[0], cmd, &calls[0]); err != nil {
		cmd = redis.NewCmd(ctx) // the sent one may still be written to
		cmd.SetErr(err)
	}
	return []*redis.Cmd{cmd}, cmd.Err()
}

// evalAgain sends the calls whose EVALSHA (cmds[i]) a server answered
// NOSCRIPT (its script cache was flushed, it restarted, or it is a new
// cluster node) again, in one pipeline, with the body (EVAL), and puts
// their replies into cmds. Only those: a call that ran must not run twice.
func evalAgain(ctx context.Context, rdb redis.UniversalClient, calls []scriptCall, cmds []*redis.Cmd) {
	var again []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	evals := make([]*redis.Cmd, len(again))
	p := rdb.Pipeline()
	for j, i := range again {
		evals[j] = calls[i].script.Eval(ctx, p, calls[i].keys, calls[i].args...) // queued, not sent yet
	}
	_, _ = pipe.Exec(ctx, p) // each command carries its own error
	for j, i := range again {
		adopt(cmds[i], evals[j])
	}
}

// adopt puts the reply of src, a script's EVAL, into dst, its EVALSHA.
func adopt(dst, src *redis.Cmd) {
	dst.SetVal(src.Val())
	dst.SetErr(src.Err())
}

// firstErr is the first error among cmds.
func firstErr(cmds []*redis.Cmd) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}
