package engine

import "time"

// refusals follows the refused fills of one key in one fill. A refused
// fill means a write landed after the lease was taken, so the value loaded
// may be older than it: the key is read again and, if nobody else filled
// it, loaded again. Writes could refuse every fill for as long as they
// come; the key is read again for one wait budget from the first refusal,
// and past it the last value loaded is returned without being cached. Every
// caller handed it joined before the read that led to that load was sent,
// so it is no older than any of their starts.
type refusals struct{ first time.Time }

// again records a refusal and reports whether to read the key again.
func (r *refusals) again(budget time.Duration) bool {
	now := time.Now()
	if r.first.IsZero() {
		r.first = now
	}
	return now.Sub(r.first) < budget
}
