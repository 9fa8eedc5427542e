package stock

// ConsumerStats are counters of one Consumer since NewConsumer.
type ConsumerStats struct {
	Applied      int64 // events the sink accepted
	Credited     int64 // bucket transfers landed by the consumer
	Expired      int64 // holds that ran out and were released
	Claimed      int64 // entries taken over from another (crashed or slow) consumer
	Failed       int64 // failed applications (retried later)
	DeadLettered int64 // entries moved to the dead-letter stream
	Parked       int64 // releases/confirms waiting for their reservation, at the last check
	ParkAlerts   int64 // checks that found one waiting longer than ParkAlert
	// NameConflicts counts the times this consumer found its name held by
	// another live consumer and took a name of its own.
	NameConflicts int64
}

// Stats returns the consumer's counters.
func (c *Consumer) Stats() ConsumerStats {
	return ConsumerStats{
		Applied: c.applied.Load(), Credited: c.credited.Load(), Expired: c.expired.Load(),
		Claimed: c.claimed.Load(), Failed: c.failed.Load(), DeadLettered: c.dead.Load(),
		Parked: c.parked.Load(), ParkAlerts: c.parkAlert.Load(), NameConflicts: c.nameConflicts.Load(),
	}
}
