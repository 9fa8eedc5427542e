package cache

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// scriptCall is one run of a Lua script inside a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runScripts sends calls in one pipeline by SHA (EVALSHA), so a batch does
// not carry every script's body. The calls a server answers NOSCRIPT (its
// script cache was flushed, it restarted, or it is a new cluster node) are
// sent again, and only those, with the body (EVAL): a call that ran must not
// run twice. It returns one Cmd per call, in order, and the first error among
// them, as Pipelined does.
func runScripts(ctx context.Context, rdb redis.UniversalClient, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds, nil
	}
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sc := range calls {
			cmds[i] = sc.script.EvalSha(ctx, p, sc.keys, sc.args...)
		}
		return nil
	})
	var again []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = calls[i].script.Eval(ctx, p, calls[i].keys, calls[i].args...)
			}
			return nil
		})
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}
