package hotkey

// Stats are a Detector's counters since New.
type Stats struct {
	Promoted uint64 // keys that became hot (at a tick, or early between ticks)
	Demoted  uint64 // keys that stopped being hot
	Hot      int    // keys hot at the last tick

	// With WithFleet (fleet.go):
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
