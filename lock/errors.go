package lock

import (
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/kind"
)

var (
	// ErrNotObtained is returned when a lock could not be taken: TryLock found
	// it held by another owner, or Lock gave up waiting. When Lock gave up
	// because its context ended, the error also matches ctx.Err().
	ErrNotObtained = errors.New("cacheguard: lock: not obtained")

	// ErrNotHeld is returned by Unlock, Extend and TTL when the lock is no
	// longer held by the handle's owner: its lease ran out, or it was deleted
	// or taken by someone else. Nothing is changed in Redis in that case.
	ErrNotHeld = errors.New("cacheguard: lock: not held")

	// ErrLost is the cause (see context.Cause) of a handle's context when the
	// lease was lost while the handle was still in use. The wrapping error
	// says why: the lease ran out, the key was gone, another owner took it,
	// or the client was closed.
	ErrLost = errors.New("cacheguard: lock: lease lost")

	// ErrReleased is the cause of a handle's context after a normal Unlock.
	ErrReleased = errors.New("cacheguard: lock: released")

	// ErrClosed is returned by calls on a closed Client, Redlock or
	// MultiLock.
	ErrClosed = kind.Closed("lock")

	// ErrInvalidArgument is wrapped by the error of an argument refused: a
	// lock name that cannot make a Redis key whose keys stay in one cluster
	// slot (see Client.Mutex), a nil client, a Redlock without nodes.
	ErrInvalidArgument = kind.InvalidArgument("lock")

	// ErrRedis is wrapped by the error of a Redis call that failed: the
	// server was unreachable, answered an error, or took longer than the
	// call's bound (WithTimeout, or the lease), in which case the error also
	// matches context.DeadlineExceeded. The end of the caller's own context
	// is not one: it comes back as ctx.Err(), with ErrNotObtained.
	ErrRedis = kind.Redis("lock")

	// ErrInvalidOption is wrapped by the error of an option that makes no
	// sense: New and NewRedlock return it, a lock made with one returns it
	// from its first call.
	ErrInvalidOption = kind.InvalidOption("lock")

	// ErrUpgrade is returned when an owner holding a read lock asks for the
	// write lock of the same RWMutex. Waiting would deadlock on itself.
	ErrUpgrade = errors.New("cacheguard: lock: cannot upgrade a read lock to a write lock")
)

// lostf builds a cause matching ErrLost that says why the lease was lost.
func lostf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLost, fmt.Sprintf(format, args...))
}

// notObtained wraps the context's error so that the result matches both
// ErrNotObtained and ctx.Err() with errors.Is.
func notObtained(name string, ctxErr error) error {
	return kind.Errorf("%w: %q: %w", ErrNotObtained, name, ctxErr)
}
