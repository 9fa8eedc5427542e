package stock

import (
	"context"
	"time"
)

// Parker is implemented by sinks that can say how many releases or confirms
// have waited for their reservation since before a time.
type Parker interface {
	Parked(ctx context.Context, since time.Time) (int64, error)
}

func (c *Consumer) checkParked(ctx context.Context) {
	p, ok := c.sink.(Parker)
	last := c.lastPark.Load()
	if !ok || time.Since(time.Unix(0, last)) < c.cfg.parkAlert/2 || !c.lastPark.CompareAndSwap(last, time.Now().UnixNano()) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	n, err := p.Parked(rctx, time.Now().Add(-c.cfg.parkAlert))
	if err != nil {
		c.report.Warn("cacheguard: stock: consumer: parked check", err)
		return
	}
	c.parked.Store(n)
	if n > 0 {
		c.parkAlert.Add(1)
		c.report.Logger.Warn("cacheguard: stock: releases or confirms parked waiting for their reservation", "count", n, "older_than", c.cfg.parkAlert)
	}
}
