package hotkey

import "time"

// Stats are a Detector's counters since New.
type Stats struct {
	Promoted uint64 // keys that became hot (at a tick, or early between ticks)
	Demoted  uint64 // keys that stopped being hot
	Hot      int    // keys hot at the last tick

	// With WithFleet (fleet.go). A failed reading of the server's clock
	// before a detector's first exchange counts as a failed exchange.
	FleetExchanges uint64 // exchanges with the group's counts in Redis
	FleetErrors    uint64 // of those, failed ones (each reported to WithErrorHandler)
	FleetHot       int    // keys hot across the fleet at the last exchange
}

// Stats returns the counters. A nil *Detector has none.
func (d *Detector) Stats() Stats {
	if d == nil {
		return Stats{}
	}
	return Stats{Promoted: d.nPromoted.Load(), Demoted: d.nDemoted.Load(), Hot: len(d.hot.Load().top),
		FleetExchanges: d.nFleetExchanges.Load(), FleetErrors: d.nFleetErrors.Load(), FleetHot: int(d.nFleetHot.Load())}
}

// changed counts ev and reports it to the WithOnChange callback, if any.
func (d *Detector) changed(ev Event) {
	if ev.Hot {
		d.nPromoted.Add(1)
	} else {
		d.nDemoted.Add(1)
	}
	if d.cfg.onChange != nil {
		d.cfg.onChange(ev)
	}
}

// notify reports the difference between two hot sets, and the keys promoted
// early (with their promotion times) that the tick did not keep. entries are
// this tick's candidates, for the count of a demoted key that is still
// tracked. Its cost is one pass over entries, and that only when keys were
// demoted, plus a map lookup per hot key: a tick that demotes every key costs
// about as much as one that demotes one.
func (d *Detector) notify(prev, next *snapshot, entries []Entry, early map[string]time.Time, now time.Time) {
	at := func(key string) time.Time {
		if t, ok := early[key]; ok {
			return t
		}
		return now
	}
	for _, e := range next.top {
		if _, was := prev.byKey[e.Key]; !was {
			d.changed(Event{Key: e.Key, Hot: true, Count: e.Count, At: at(e.Key)})
		}
	}
	demoted := d.demoted[:0]
	for _, e := range prev.top {
		if _, is := next.byKey[e.Key]; !is {
			demoted = append(demoted, Entry{Key: e.Key})
		}
	}
	// A key promoted early that this tick did not keep was hot for a while:
	// both changes are reported.
	for key, t := range early {
		_, is := next.byKey[key]
		_, was := prev.byKey[key]
		if !is && !was {
			// Promoted at the threshold in force until this tick.
			d.changed(Event{Key: key, Hot: true, Count: d.earlyThr.Load() * uint64(d.cfg.sampling), At: t})
			demoted = append(demoted, Entry{Key: key})
		}
	}
	if len(demoted) > 0 {
		// A demoted key that is still a candidate reports its count.
		idx := make(map[string]int, len(demoted))
		for i, e := range demoted {
			idx[e.Key] = i
		}
		for _, c := range entries {
			if i, ok := idx[c.Key]; ok {
				demoted[i].Count = c.Count * uint64(d.cfg.sampling)
			}
		}
		for _, e := range demoted {
			d.changed(Event{Key: e.Key, Hot: false, Count: e.Count, At: now})
		}
	}
	clear(demoted)
	d.demoted = demoted[:0]
}
