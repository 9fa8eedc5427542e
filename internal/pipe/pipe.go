// Package pipe runs go-redis pipelines so that a command the pipeline
// leaves unanswered fails instead of reading as a success.
//
// A go-redis hook may refuse a pipeline without sending it, or drop a
// command from it, and leave the commands as they were made: no error, the
// zero value. Read as they stand, a GET is an empty value, a script a nil
// reply, an UNLINK or a PUBLISH a zero, each a success. So every command is
// marked before its pipeline runs, with a value no reply of its can leave
// behind, and a command still marked afterwards fails with ErrNoReply
// (wrapping the error Exec returned, unless that is another command's reply
// error). A reply, an error, or a value a hook sets replaces the mark.
//
// Commands whose replies leave no value free for a mark (a BoolCmd's bool,
// the counters INCRBY and DECRBY, which can land on any integer) are marked
// with the error ErrNoReply itself, which a reply clears. go-redis stamps a
// pipeline's failure (a lost connection, an ended context) only on commands
// without an error, so such a command still marked after an Exec that
// failed gets Exec's error, as it would have. A hook that answers such a
// command itself, without sending it, must clear its error too.
//
// Every pipeline of the library's packages and of the cacheguard command
// runs through Run, Exec or Send.
package pipe

import (
	"context"
	"errors"
	"math"
	"reflect"
	"unsafe"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// ErrNoReply is matched by the error of a pipelined command that got no
// reply (a go-redis hook refused the pipeline or dropped the command).
var ErrNoReply = errors.New("cacheguard: no reply to a pipelined command")

var (
	// noReplyString marks a command of string reply: compared by where
	// its bytes are, so that no reply, whatever its text, can equal it.
	noReplyString = string([]byte("cacheguard: no reply"))
	// noReplyValue marks a command of any reply (a script's).
	noReplyValue any = new(byte)
	// noReplyFloat marks a command of float reply: a NaN, which no Redis
	// reply is (INCRBYFLOAT and ZINCRBY refuse to make one), compared by
	// its bits.
	noReplyFloat = math.Float64frombits(0x7ff8_cace_6ed0_0001)
	// Slices compared by where their elements are: a reply's are its own.
	noReplyZ       = make([]redis.Z, 0, 1)
	noReplyStrings = make([]string, 0, 1)
	noReplyAnys    = make([]any, 0, 1)
	noReplyInts    = make([]int64, 0, 1)
	// noReplyMap marks a command of map reply, compared by identity.
	noReplyMap = map[string]string{}
)

// noReplyInt marks a command of integer reply (UNLINK, DEL, HSET, PUBLISH,
// PTTL), which no reply of theirs can be; not the counters (counters).
const noReplyInt = math.MinInt64

// counters are the commands of integer reply that can reply any integer.
var counters = map[string]bool{"incr": true, "incrby": true, "decr": true, "decrby": true, "hincrby": true}

// Mark marks cmd as not answered yet.
func Mark(cmd redis.Cmder) {
	switch c := cmd.(type) {
	case *redis.StringCmd:
		c.SetVal(noReplyString)
	case *redis.StatusCmd:
		c.SetVal(noReplyString)
	case *redis.Cmd:
		c.SetVal(noReplyValue)
	case *redis.IntCmd:
		if counters[c.Name()] {
			c.SetErr(ErrNoReply)
		} else {
			c.SetVal(noReplyInt)
		}
	case *redis.DurationCmd:
		c.SetVal(noReplyInt)
	case *redis.MapStringStringCmd:
		c.SetVal(noReplyMap)
	case *redis.FloatCmd:
		c.SetVal(noReplyFloat)
	case *redis.ZSliceCmd:
		c.SetVal(noReplyZ)
	case *redis.StringSliceCmd:
		c.SetVal(noReplyStrings)
	case *redis.SliceCmd:
		c.SetVal(noReplyAnys)
	case *redis.IntSliceCmd:
		c.SetVal(noReplyInts)
	default:
		cmd.SetErr(ErrNoReply)
	}
}

// unanswered tells whether cmd, marked before its pipeline ran, still
// holds its mark; errMark whether that mark is the error.
func unanswered(cmd redis.Cmder) (marked, errMark bool) {
	if err := cmd.Err(); err != nil {
		return err == ErrNoReply, true // the mark itself, not a wrapping
	}
	return valueMarked(cmd), false
}

// valueMarked tells whether cmd, without an error, holds its value mark.
func valueMarked(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.StringCmd:
		return isNoReplyString(c.Val())
	case *redis.StatusCmd:
		return isNoReplyString(c.Val())
	case *redis.Cmd:
		return c.Val() == noReplyValue
	case *redis.IntCmd:
		return !counters[c.Name()] && c.Val() == noReplyInt // a counter's is its reply
	case *redis.DurationCmd:
		return c.Val() == noReplyInt
	case *redis.MapStringStringCmd:
		return c.Val() != nil && reflect.ValueOf(c.Val()).UnsafePointer() == reflect.ValueOf(noReplyMap).UnsafePointer()
	case *redis.FloatCmd:
		return math.Float64bits(c.Val()) == math.Float64bits(noReplyFloat)
	case *redis.ZSliceCmd:
		return sameSlice(c.Val(), noReplyZ)
	case *redis.StringSliceCmd:
		return sameSlice(c.Val(), noReplyStrings)
	case *redis.SliceCmd:
		return sameSlice(c.Val(), noReplyAnys)
	case *redis.IntSliceCmd:
		return sameSlice(c.Val(), noReplyInts)
	}
	return false
}

// Fail fails cmd, if its pipeline (whose Exec returned execErr) did not
// answer it, and tells whether it did. A command the pipeline's failure
// would have reached but for its error mark gets execErr, as go-redis
// would have stamped it; otherwise ErrNoReply, wrapping execErr when that
// is the pipeline's failure rather than another command's reply error (a
// dropped GET must not read as that command's WRONGTYPE or NOSCRIPT).
func Fail(cmd redis.Cmder, execErr error) bool {
	marked, errMark := unanswered(cmd)
	if !marked {
		return false
	}
	var reply redis.Error
	switch {
	case execErr == nil, errors.Is(execErr, redis.Nil), errors.Is(execErr, ErrNoReply), errors.As(execErr, &reply):
		cmd.SetErr(ErrNoReply)
	case errMark:
		cmd.SetErr(execErr)
	default:
		cmd.SetErr(kind.Errorf("%w: %w", ErrNoReply, execErr))
	}
	return true
}

// Exec marks p's queued commands, runs p and fails the commands it left
// unanswered. It returns the commands and Exec's error, or, when Exec said
// nothing, the error of the first command left unanswered: a caller that
// checks only the error does not take a dropped command for a success.
func Exec(ctx context.Context, p redis.Pipeliner) ([]redis.Cmder, error) {
	cmds, err, dropped := exec(ctx, p)
	if err == nil {
		err = dropped
	}
	return cmds, err
}

// Run is go-redis's Pipelined through Exec: fn queues commands on p (a
// Pipeline or a TxPipeline of the caller's client), which then runs. An
// error of fn discards them and is returned.
func Run(ctx context.Context, p redis.Pipeliner, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	if err := fn(p); err != nil {
		p.Discard()
		return nil, err
	}
	return Exec(ctx, p)
}

// Send runs cmds, already made, in the pipeline p, marked as Exec marks
// them, and returns what p's Exec returned: for callers that read every
// command's own error (a command left unanswered has ErrNoReply).
func Send[C redis.Cmder](ctx context.Context, p redis.Pipeliner, cmds []C) error {
	for _, cmd := range cmds {
		_ = p.Process(ctx, cmd)
	}
	_, err, _ := exec(ctx, p)
	return err
}

// exec is Exec, returning Exec's error and the first unanswered command's
// apart.
func exec(ctx context.Context, p redis.Pipeliner) (cmds []redis.Cmder, execErr, dropped error) {
	cmds = p.Cmds()
	for _, cmd := range cmds {
		Mark(cmd)
	}
	_, execErr = p.Exec(ctx)
	for _, cmd := range cmds {
		if Fail(cmd, execErr) && dropped == nil {
			dropped = cmd.Err()
		}
	}
	return cmds, execErr, dropped
}

// isNoReplyString tells whether v is noReplyString itself, not a copy.
func isNoReplyString(v string) bool {
	return len(v) == len(noReplyString) && unsafe.StringData(v) == unsafe.StringData(noReplyString)
}

// sameSlice tells whether v is the mark m itself.
func sameSlice[E any](v, m []E) bool {
	return cap(v) == cap(m) && unsafe.SliceData(v) == unsafe.SliceData(m)
}
