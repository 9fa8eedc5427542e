package hotkey

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The fleet's clock. A fleet's windows are numbered by the Redis server's
// clock, not by each instance's: numbered by their own clocks, instances a
// fraction of a window apart would add their counts to different windows and
// read windows the others had not finished, and those furthest ahead would
// never see the sum of a key that is hot by a fair margin.
//
// Each exchange reads the server's TIME in its pipeline, on the node that
// holds the group's slot (a read-only script that declares one of the
// group's keys, so that every instance of a group reads the same server's
// clock on any Cluster). The detector keeps the offset of that time from its
// own clock at the middle of the round trip, and numbers the next windows by
// its own clock plus that offset. Before its first exchange it asks for the
// time alone (one more round trip, once, retried at most once a window of its
// own clock while it fails), so that its first exchange reads the windows the
// others fill. The instances of a group then start their windows within a
// tick plus half a round trip of each other (plus whatever their clocks drift
// in a window), however far apart their clocks are. A clock that steps is
// corrected at the next exchange; windows are never exchanged twice, so one
// that steps back waits for the next window.
//
// With WithClock the caller owns time, the fleet's windows included: the
// detector's clock numbers them and the server's is not read (a simulated
// clock cannot be compared with a server's), so detectors of one group given
// WithClock must be given clocks that agree.

// serverTime reads the server's clock on the node of KEYS[1].
var serverTime = redis.NewScript(`return redis.call('TIME')`)

// serverClock reports whether the fleet's windows are numbered by the
// server's clock (see above).
func (d *Detector) serverClock() bool { return !d.cfg.manualClk || d.cfg.serverNow != nil }

// queueTime queues on p the reading of the server's clock on the node of
// key, and returns the function that reads the reply once p has run.
func (d *Detector) queueTime(ctx context.Context, p redis.Pipeliner, key string) func() (time.Time, error) {
	if d.cfg.serverNow != nil {
		return func() (time.Time, error) { return d.cfg.serverNow(), nil }
	}
	cmd := serverTime.EvalRO(ctx, p, []string{key})
	return func() (time.Time, error) {
		v, err := cmd.Slice()
		if err != nil {
			return time.Time{}, err
		}
		if len(v) != 2 {
			return time.Time{}, fmt.Errorf("TIME replied %v", v)
		}
		sec, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
		usec, err2 := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
		if err1 != nil || err2 != nil {
			return time.Time{}, fmt.Errorf("TIME replied %v", v)
		}
		return time.Unix(sec, usec*1000), nil
	}
}

// learnOffset keeps the offset of server, the server's time read between
// before and after on the detector's clock, from the middle of that span.
func (d *Detector) learnOffset(server, before, after time.Time) {
	d.fleetOffset = server.Sub(before) - after.Sub(before)/2
	d.fleetSynced = true
}

// syncFleetClock learns the offset of the server's clock in a round trip of
// its own, before the detector's first exchange.
func (d *Detector) syncFleetClock() error {
	if !d.serverClock() {
		d.fleetSynced = true // the detector's clock numbers the windows
		return nil
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.fleetTimeout())
	defer cancel()
	key, _ := wire.FleetKeys(d.cfg.prefix, d.cfg.fleet.group, 0) // any key of the group: its slot's node
	var read func() (time.Time, error)
	before := d.cfg.now()
	_, err := pipe.Run(ctx, d.cfg.fleet.rdb.Pipeline(), func(p redis.Pipeliner) error {
		read = d.queueTime(ctx, p, key)
		return nil
	})
	after := d.cfg.now()
	var server time.Time
	if err == nil {
		server, err = read()
	}
	if err != nil {
		return kind.Wrap(ErrRedis, fmt.Sprintf("server time of group %q", d.cfg.fleet.group), err)
	}
	d.learnOffset(server, before, after)
	return nil
}
