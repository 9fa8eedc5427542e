package consistency

import "sync/atomic"

// Stats are counters of one Queue instance since New.
type Stats struct {
	Recorded          uint64 // deletes recorded in the queue (Update, failed Invalidate, InvalidateAfter)
	FirstDeleteErrors uint64 // Update's first delete failed (the recorded one followed)
	Done              uint64 // recorded deletes this instance carried out
	Retries           uint64 // failed attempts put back with backoff
	DeadLettered      uint64 // deletes given up after the retry budget
	LostClaims        uint64 // entries not settled here because their claim expired (another instance took them) or Update moved them meanwhile
	RedisErrors       uint64 // queue operations that Redis failed
}

type counters struct {
	recorded, firstDeleteErrors, done, retries, dead, lostClaims, redisErrors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Recorded:          c.recorded.Load(),
		FirstDeleteErrors: c.firstDeleteErrors.Load(),
		Done:              c.done.Load(),
		Retries:           c.retries.Load(),
		DeadLettered:      c.dead.Load(),
		LostClaims:        c.lostClaims.Load(),
		RedisErrors:       c.redisErrors.Load(),
	}
}
