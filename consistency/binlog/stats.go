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
}

type counters struct {
	tx, rows, keys, saves, clears, ddl, unnamed, errors atomic.Uint64
	lag                                                 atomic.Int64 // nanoseconds
}

func (c *counters) snapshot() Stats {
	return Stats{Transactions: c.tx.Load(), Rows: c.rows.Load(), Keys: c.keys.Load(), Saves: c.saves.Load(),
		Clears: c.clears.Load(), TableDDL: c.ddl.Load(), UnnamedRows: c.unnamed.Load(),
		Errors: c.errors.Load(), Lag: time.Duration(c.lag.Load())}
}
