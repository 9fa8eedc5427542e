package lock

import "context"

// Mutex is an exclusive lock shared by every process that uses the same name
// (and key prefix) on the same Redis.
type Mutex struct {
	e   *engine
	b   backend
	cfg config
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.b.name() }

// Lock takes the lock, waiting for it as long as ctx allows. The owner id is
// taken from ctx (see ContextWithOwner); if it already holds the lock, the call adds
// a reentrant hold. When ctx ends first, the error matches both
// ErrNotObtained and ctx.Err().
func (m *Mutex) Lock(ctx context.Context) (*Handle, error) {
	return m.e.obtain(ctx, m.b, &m.cfg, true)
}

// TryLock takes the lock if it is free (or already held by the owner in ctx)
// and returns ErrNotObtained at once otherwise.
func (m *Mutex) TryLock(ctx context.Context) (*Handle, error) {
	return m.e.obtain(ctx, m.b, &m.cfg, false)
}
