// Package errs holds the cache's sentinel errors, which every component
// returns and package cache exports under the same names, and the rules
// that classify an error from Redis: the caller's own context, a reply
// error of one command, a key of another Redis type.
package errs

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The sentinels; package cache documents each where it exports it.
var (
	ErrNotFound            = errors.New("cacheguard: cache: not found")
	ErrWaitTimeout         = errors.New("cacheguard: cache: timed out waiting for another caller's fill")
	ErrInvalidArgument     = kind.InvalidArgument("cache")
	ErrValueTooLarge       = errors.New("cacheguard: cache: value too large")
	ErrClosed              = kind.Closed("cache")
	ErrRedis               = kind.Redis("cache")
	ErrInvalidOption       = kind.InvalidOption("cache")
	ErrSubscriptionRefused = errors.New("cacheguard: cache: subscription refused by the Redis ACL")
	ErrCircuitOpen         = errors.New("cacheguard: cache: redis circuit open")
	ErrReplicaLag          = errors.New("cacheguard: cache: replicas did not acknowledge in time")
	ErrRateLimited         = errors.New("cacheguard: cache: rate limited")
	ErrUnsupportedServer   = errors.New("cacheguard: cache: unsupported redis server")
)

// ErrEmptyKey and ErrNilLoader are the cache's two fixed bad arguments.
var (
	ErrEmptyKey  = fmt.Errorf("%w: empty key", ErrInvalidArgument)
	ErrNilLoader = fmt.Errorf("%w: nil loader", ErrInvalidArgument)
)

// CheckKey refuses a key no caller may use: empty, or starting with the
// generation mark (wire.ReservedKey).
func CheckKey(key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	if wire.ReservedKey(key) {
		return fmt.Errorf("%w: key %q starts with the reserved byte 0xFF", ErrInvalidArgument, key)
	}
	return nil
}

// Caller returns ctx's own error in place of err once ctx has ended
// (kind.Ended says why): taken for a Redis failure, a caller's deadline
// would count against the breaker and start fallback loads while Redis is
// healthy.
func Caller(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, redis.Nil) {
		if cerr := kind.Ended(ctx); cerr != nil {
			return cerr
		}
	}
	return err
}

// IsCtx reports a context's own error (the caller gave up; nothing failed).
func IsCtx(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// IsWrongType reports a WRONGTYPE reply: the key holds another Redis type.
func IsWrongType(err error) bool { return err != nil && redis.HasErrorPrefix(err, "WRONGTYPE") }

// IsReply reports an error Redis answered for one command (it did not
// run); anything else (a lost connection, a timeout) leaves unknown whether
// the command ran.
func IsReply(err error) bool {
	var reply redis.Error
	return err != nil && !errors.Is(err, redis.Nil) && errors.As(err, &reply)
}
