package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// sendCmds sends batch's commands as one pipeline (and its scripts
// answered NOSCRIPT again with their bodies) and hands each caller its
// reply. The pipeline's context carries the values of its first caller's
// (a tracing hook finds its parent span there, as on a plain command) and
// the latest of the callers' deadlines (none if one of them has none): a
// caller whose context ends before the reply has left already.
func (c *Redis) sendCmds(batch []*queued) {
	ctx, cancel := context.WithoutCancel(batch[0].ctx), context.CancelFunc(func() {})
	if dl, ok := latestDeadline(batch); ok {
		ctx, cancel = context.WithDeadline(ctx, dl)
	}
	defer cancel()
	p := c.rdb.Pipeline()
	var calls []script.Call
	var scripts []*redis.Cmd
	var gets []redis.Cmder // GETs handed to the batchReads hook
	for _, g := range batch {
		if c.hooks != nil && c.hooks.BatchReads != nil && g.script == nil && g.cmd.Name() == "get" {
			gets = append(gets, g.cmd)
			continue
		}
		pipe.Mark(g.cmd)
		_ = p.Process(ctx, g.cmd)
		if g.script != nil {
			calls, scripts = append(calls, *g.script), append(scripts, g.cmd.(*redis.Cmd))
		}
	}
	replied := func() {}
	if len(gets) > 0 {
		replied = c.hooks.BatchReads(ctx, p, gets)
	}
	execErr, panicked := execPipeline(ctx, p) // each command carries its own error
	if panicked == nil {
		replied()
	}
	if panicked == nil && len(calls) > 0 {
		panicked = guard("script", func() { script.Retry(ctx, c.rdb, calls, scripts) })
	}
	for _, g := range batch {
		if panicked != nil {
			g.cmd.SetErr(panicked)
		} else {
			pipe.Fail(g.cmd, execErr)
		}
		g.done <- struct{}{}
	}
}

// execPipeline sends p and returns Exec's error, and a panic (of a
// go-redis hook, say) as an error for every caller of the batch: on this
// goroutine nobody could recover it, and the queue must move on.
func execPipeline(ctx context.Context, p redis.Pipeliner) (execErr, panicked error) {
	panicked = guard("read", func() { _, execErr = p.Exec(ctx) })
	return execErr, panicked
}

// guard runs send, returning a panic of it as an error.
func guard(what string, send func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: cache: %s pipeline panicked: %v", what, p)
		}
	}()
	send()
	return nil
}

// latestDeadline is the latest of batch's deadlines; ok is false if one of
// its callers has none.
func latestDeadline(batch []*queued) (dl time.Time, ok bool) {
	for _, g := range batch {
		if g.deadline.IsZero() {
			return time.Time{}, false
		}
		if g.deadline.After(dl) {
			dl = g.deadline
		}
	}
	return dl, true
}
