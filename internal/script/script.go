// Package script runs Lua scripts by SHA, with the one fallback for a
// server that does not know them.
//
// A script call (a script, its keys, its arguments) is sent by EVALSHA, so
// that a batch of calls does not carry every script's body. A server that
// answers NOSCRIPT (its script cache was flushed, it restarted, or it is a
// cluster node new to the script) did not run that call; only those calls
// are sent again, with the body (EVAL), so a call that ran never runs twice.
// Whatever a call's reply, it lands in the call's EVALSHA command: one
// *redis.Cmd per call, in the order of the calls.
//
// Run sends a batch's EVALSHAs in one pipeline and the calls refused with
// NOSCRIPT again in one more pipeline; Retry is that second step for
// EVALSHAs sent another way (a caller's own pipeline, with other commands);
// Process sends one call as a plain command, and a refused one again as a
// plain EVAL, as go-redis's Script.Run does. Pipelines run through
// internal/pipe, so a call a go-redis hook left unanswered fails with
// pipe.ErrNoReply. Bounding the calls by a context, and what a caller makes
// of the replies, are the caller's.
package script

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// Call is one run of a Lua script.
type Call struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// EvalSha is c's EVALSHA command, not sent yet (as go-redis's EvalSha
// builds it: its first key at 3, for a cluster's routing).
func (c Call) EvalSha(ctx context.Context) *redis.Cmd {
	args := make([]any, 0, 3+len(c.Keys)+len(c.Args))
	args = append(args, "evalsha", c.Script.Hash(), len(c.Keys))
	for _, k := range c.Keys {
		args = append(args, k)
	}
	cmd := redis.NewCmd(ctx, append(args, c.Args...)...)
	if len(c.Keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// Run sends calls in one pipeline of rdb by SHA, and those answered
// NOSCRIPT again with their bodies (Retry). It returns one Cmd per call, in
// order, and the first error among them, as Pipelined does.
func Run(ctx context.Context, rdb redis.UniversalClient, calls []Call) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds, nil
	}
	for i, c := range calls {
		cmds[i] = c.EvalSha(ctx)
	}
	_ = pipe.Send(ctx, rdb.Pipeline(), cmds) // each command carries its own error
	Retry(ctx, rdb, calls, cmds)
	return cmds, FirstErr(cmds)
}

// Retry sends the calls whose EVALSHA (cmds[i], for calls[i]) a server
// answered NOSCRIPT again, in one pipeline of rdb, with the body (EVAL),
// and puts their replies into cmds. Only those: a call that ran must not
// run twice. It sends nothing when no call was refused.
func Retry(ctx context.Context, rdb redis.UniversalClient, calls []Call, cmds []*redis.Cmd) {
	var again []int
	for i, cmd := range cmds {
		if refused(cmd) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	evals := make([]*redis.Cmd, len(again))
	p := rdb.Pipeline()
	for j, i := range again {
		evals[j] = calls[i].Script.Eval(ctx, p, calls[i].Keys, calls[i].Args...) // queued, not sent yet
	}
	_, _ = pipe.Exec(ctx, p) // each command carries its own error
	for j, i := range again {
		adopt(cmds[i], evals[j])
	}
}

// Process sends cmd, c's EVALSHA (EvalSha), as one plain command of rdb,
// and c again as a plain EVAL if the server answered NOSCRIPT; the reply
// is cmd's.
func Process(ctx context.Context, rdb redis.UniversalClient, cmd *redis.Cmd, c Call) {
	_ = rdb.Process(ctx, cmd) // cmd carries its error
	if refused(cmd) {
		adopt(cmd, c.Script.Eval(ctx, rdb, c.Keys, c.Args...))
	}
}

// FirstErr is the first error among cmds.
func FirstErr(cmds []*redis.Cmd) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}

// refused tells whether the server answered cmd, an EVALSHA, NOSCRIPT: it
// did not run it.
func refused(cmd *redis.Cmd) bool {
	return redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT")
}

// adopt puts the reply of src, a call's EVAL, into dst, its EVALSHA.
func adopt(dst, src *redis.Cmd) {
	dst.SetVal(src.Val())
	dst.SetErr(src.Err())
}
