package consistency

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// Update runs write, the database write that changes the rows behind keys,
// wrapped in a delayed double delete:
//
//  1. the second delete is recorded in the queue, due after the write grace
//     plus the delay (WithWriteGrace, WithDelay);
//  2. the keys are deleted (values and fill leases: a reader that loaded the
//     old row before this point cannot fill it);
//  3. write runs;
//  4. the recorded delete is moved to the delay after now.
//
// The second delete covers what the lease cannot see: a reader that loads
// the old row after the first delete, from a lagging replica or before the
// write commits, and fills it. Because it is recorded before the write, it
// happens even if this process dies right after the write; another instance
// runs it when it comes due, so grace + delay bounds how long such a value
// survives a crash.
//
// If the delete cannot be recorded (Redis is down), write does not run and
// Update returns an error wrapping ErrRedis: nothing changed. A failed
// first delete is reported to the logger and does not stop the write, since
// the recorded delete will follow. Update returns write's error; the second
// delete happens whatever write returned, because a failed write may still
// have committed.
func (t *Target) Update(ctx context.Context, keys []string, write func(ctx context.Context) error) error {
	if write == nil {
		return errors.New("cacheguard: consistency: Update: nil write")
	}
	if err := t.check(keys); err != nil {
		return err
	}
	q := t.q
	id := newID()
	e := entry{Keys: keys}
	if err := q.record(ctx, t, id, e, q.cfg.writeGrace+q.cfg.delay); err != nil {
		return kind.Errorf("cacheguard: consistency: update not run, second delete could not be recorded: %w", err)
	}
	q.stats.recorded.Add(1)
	if err := t.run(ctx, keys); err != nil {
		q.stats.firstDeleteErrors.Add(1)
		q.report(t.name, keys, kind.Errorf("cacheguard: consistency: first delete failed, the recorded one will follow: %w", err))
	}
	werr := write(ctx)
	// Move the second delete to delay after the write. The caller may have
	// given up by now; the write may have committed all the same. Update
	// returns by ctx; the move goes on in the background if need be.
	late := func(err error) {
		q.report(t.name, keys, kind.Errorf("cacheguard: consistency: second delete stays at its provisional due time: %w", err))
	}
	if err := q.recordDetached(ctx, t, id, e, q.cfg.delay, late); err != nil && !errors.Is(err, call.ErrAbandoned) {
		late(err)
	}
	return werr
}
