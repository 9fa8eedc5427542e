package binlog

import (
	"sync/atomic"
	"time"
)

// Stats are a Source's counters since New.
type Stats struct {
	Transactions uint64 // commits read from the binlog
	Rows         uint64 // row images of watched tables
	Keys         uint64 // keys invalidated (after de-duplication per save)
	Saves        uint64 // positions saved
	Clears       uint64 // key spaces cleared after TRUNCATE or DROP of a watched table
	TableDDL     uint64 // other DDL on watched tables (ALTER, RENAME), logged and passed
	UnnamedRows  uint64 // rows skipped for lack of column names (WithSkipUnnamedRows)
	Errors       uint64 // failures reported to WithErrorHandler (each passed over or retried)
	// Lag is how far behind the database the last commit read was: now
	// minus the commit's binlog timestamp (whole seconds, the server's
	// clock against ours). Zero until a commit is read.
	Lag time.Duration
	// Role is what Run does now: RoleStopped, RoleTailing, or
	// RoleStandingBy (another instance of the fleet tails).
	Role int64
	// SinceEvent is how long ago the last event (a heartbeat included)
	// was read from the stream; zero before the first.
	SinceEvent time.Duration
	// Takeovers counts the times this Source took the tailer's lease over
	// from another instance.
	Takeovers uint64
}

// The values of Stats.Role.
const (
	RoleStopped    = 0
	RoleTailing    = 1
	RoleStandingBy = 2
)

type counters struct {
	tx, rows, keys, saves, clears, ddl, unnamed, errors, takeovers atomic.Uint64
	lag, lastEvent                                                 atomic.Int64 // nanoseconds
	role                                                           atomic.Int64
}

func (c *counters) setRole(r int64) { c.role.Store(r) }

func (c *counters) snapshot() Stats {
	st := Stats{Transactions: c.tx.Load(), Rows: c.rows.Load(), Keys: c.keys.Load(), Saves: c.saves.Load(),
		Clears: c.clears.Load(), TableDDL: c.ddl.Load(), UnnamedRows: c.unnamed.Load(),
		Errors: c.errors.Load(), Lag: time.Duration(c.lag.Load()), Role: c.role.Load(), Takeovers: c.takeovers.Load()}
	if ns := c.lastEvent.Load(); ns != 0 {
		st.SinceEvent = time.Since(time.Unix(0, ns))
	}
	return st
}
