package main

import (
	"fmt"
	"time"
)

// config sizes the whole demo. Durations and TTLs of the scenarios are
// multiplied by Scale, so a test can run every storm in a few seconds.
type config struct {
	Rows      int           // rows in the database (ids 1..Rows)
	DBConns   int           // connections: queries running at once
	DBLatency time.Duration // time a query holds its connection
	DBWait    time.Duration // longest wait for a connection before a query is refused
	Rate      float64       // requests per second (the breakdown sends twice as many)
	Keys      int           // keys filled beforehand (avalanche, restart, zipfian)
	HotExtra  time.Duration // breakdown: the hot row's query is this much slower
	Scale     float64       // multiplies every scenario's durations and TTLs
	Timeout   time.Duration // each request's deadline
	InFlight  int           // requests in flight at most; more are shed
	Seed      uint64        // the request generators' seed
}

func defaultConfig() config {
	return config{
		Rows:      20000,
		DBConns:   5,
		DBLatency: 5 * time.Millisecond,
		DBWait:    100 * time.Millisecond,
		Rate:      3000,
		Keys:      1200,
		HotExtra:  45 * time.Millisecond,
		Scale:     1,
		Timeout:   time.Second,
		InFlight:  4000,
		Seed:      1,
	}
}

func (c config) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.Scale)
}

func (c config) check() error {
	switch {
	case c.Rows < 1 || c.DBConns < 1 || c.Keys < 1 || c.InFlight < 1:
		return fmt.Errorf("rows, connections, keys and in-flight must be positive")
	case c.DBLatency <= 0 || c.DBWait < 0 || c.Timeout <= 0 || c.HotExtra < 0:
		return fmt.Errorf("latency and timeout must be positive, waits not negative")
	case !(c.Rate >= 1 && c.Rate <= 1e6):
		return fmt.Errorf("rate %v must be in [1, 1e6] per second", c.Rate)
	case !(c.Scale >= 0.01 && c.Scale <= 100):
		return fmt.Errorf("scale %v must be in [0.01, 100]", c.Scale)
	}
	return nil
}
