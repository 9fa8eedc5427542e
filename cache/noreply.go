package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// A command of a pipeline that got no reply carries no error: a go-redis
// hook that refuses the pipeline without sending it, or drops a command
// from it, leaves the command as it was made. Read as it stands, such a
// GET would be an empty value (a corrupt entry), a script a nil reply, an
// UNLINK a delete of nothing, each a success. So every command is marked
// before its pipeline runs, with a value no reply can leave behind, and a
// command still marked afterwards fails with errNoReply.

// errNoReply is matched by the error of a pipelined command that got no
// reply (a go-redis hook refused the pipeline or dropped the command).
var errNoReply = errors.New("cacheguard: no reply to a pipelined command")

var (
	// noReplyString marks a command of string reply: compared by where its
	// bytes are, so that no reply, whatever its text, can equal it.
	noReplyString = string([]byte("cacheguard: no reply"))
	// noReplyValue marks a command of any reply (a script's).
	noReplyValue any = new(byte)
)

// noReplyInt marks a command of integer reply (UNLINK, DEL), which no
// reply of theirs can be.
const noReplyInt = math.MinInt64

// markUnanswered marks cmd as not answered yet: a reply, even an error,
// replaces the mark.
func markUnanswered(cmd redis.Cmder) {
	switch c := cmd.(type) {
	case *redis.StringCmd:
		c.SetVal(noReplyString)
	case *redis.StatusCmd:
		c.SetVal(noReplyString)
	case *redis.Cmd:
		c.SetVal(noReplyValue)
	case *redis.IntCmd:
		c.SetVal(noReplyInt)
	}
}

// unanswered tells whether cmd, marked before its pipeline ran, still holds
// its mark.
func unanswered(cmd redis.Cmder) bool {
	if cmd.Err() != nil {
		return false
	}
	switch c := cmd.(type) {
	case *redis.StringCmd:
		return isNoReplyString(c.Val())
	case *redis.StatusCmd:
		return isNoReplyString(c.Val())
	case *redis.Cmd:
		return c.Val() == noReplyValue
	case *redis.IntCmd:
		return c.Val() == noReplyInt
	}
	return false
}

// failUnanswered fails cmd, if its pipeline (whose Exec returned execErr)
// did not answer it, with errNoReply wrapping what Exec said.
func failUnanswered(cmd redis.Cmder, execErr error) {
	if !unanswered(cmd) {
		return
	}
	if execErr == nil || errors.Is(execErr, redis.Nil) {
		cmd.SetErr(errNoReply)
		return
	}
	cmd.SetErr(fmt.Errorf("%w: %w", errNoReply, execErr))
}

// isNoReplyString tells whether v is noReplyString itself, not a copy.
func isNoReplyString(v string) bool {
	return len(v) == len(noReplyString) && unsafe.StringData(v) == unsafe.StringData(noReplyString)
}

// pipelined sends cmds in one pipeline of rdb, marked so that a command
// the pipeline does not answer fails with errNoReply, and returns Exec's
// error (the first command's error, as Pipelined does).
func pipelined[C redis.Cmder](ctx context.Context, rdb redis.UniversalClient, cmds []C) error {
	pipe := rdb.Pipeline()
	for _, cmd := range cmds {
		markUnanswered(cmd)
		_ = pipe.Process(ctx, cmd)
	}
	_, err := pipe.Exec(ctx)
	for _, cmd := range cmds {
		failUnanswered(cmd, err)
	}
	return err
}
