package pubsub

import "time"

// What a connection asks of the subscriptions it carries.

// health returns the shortest health interval and timeout of c's
// subscriptions.
func (c *conn) health() (interval, timeout time.Duration) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	interval, timeout = defaultHealth, defaultHealth
	shortest := func(o Options) {
		if d := o.HealthInterval; d > 0 {
			interval = min(interval, d)
		}
		if d := o.HealthTimeout; d > 0 {
			timeout = min(timeout, d)
		}
	}
	for _, ch := range c.chans {
		for _, s := range ch.subs {
			shortest(s.opt)
		}
	}
	if c.track.duty {
		for _, t := range c.h.track.trackers {
			shortest(t.opt)
		}
	}
	return interval, timeout
}

// hook calls the hook pick chooses of every subscription on c.
func (c *conn) hook(pick func(*Hooks) func()) {
	var fs []func()
	c.h.mu.Lock()
	for _, ch := range c.chans {
		for _, s := range ch.subs {
			if s.opt.Hooks != nil {
				if f := pick(s.opt.Hooks); f != nil {
					fs = append(fs, f)
				}
			}
		}
	}
	c.h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// report tells every handler on c of err.
func (c *conn) report(err error) {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	for _, ch := range c.chans {
		for _, s := range ch.subs {
			s.hd.Report(err)
		}
	}
}
