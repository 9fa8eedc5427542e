package lock

import (
	"context"
	"crypto/rand"
)

// ownerKey is the context key under which ContextWithOwner stores an owner id.
type ownerKey struct{}

// ContextWithOwner returns a context that carries owner as the lock owner id.
//
// Go has no thread identity, so reentrancy is explicit: two acquisitions of
// the same lock are the same hold only if they present the same owner id.
// Lock and TryLock use the id found in their context; without one, every
// acquisition gets a fresh random id and is therefore not reentrant. A
// handle's Context already carries its owner id, so passing it down makes
// nested acquisitions of the same lock reentrant.
//
// Owner ids must be unique per logical owner across every process that uses
// the lock: two unrelated callers presenting the same id would share it.
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFromContext returns the owner id carried by ctx, if any.
func OwnerFromContext(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(ownerKey{}).(string)
	return o, ok && o != ""
}

// newOwner returns a random 128-bit owner id.
func newOwner() string { return rand.Text() }
