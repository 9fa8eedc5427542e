package binlog

import "sync/atomic"

// Stats are a Source's counters since New.
type Stats struct {
	Transactions uint64 // commits read from the binlog
	Rows         uint64 // row images of watched tables
	Keys         uint64 // keys invalidated (after de-duplication per save)
	Saves        uint64 // positions saved
	Clears       uint64 // key spaces cleared after TRUNCATE or DROP of a watched table
	TableDDL     uint64 // other DDL on watched tables (ALTER, RENAME), logged and passed
	UnnamedRows  uint64 // rows skipped for lack of column names (WithSkipUnnamedRows)
}

type counters struct {
	tx, rows, keys, saves, clears, ddl, unnamed atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{Transactions: c.tx.Load(), Rows: c.rows.Load(), Keys: c.keys.Load(), Saves: c.saves.Load(),
		Clears: c.clears.Load(), TableDDL: c.ddl.Load(), UnnamedRows: c.unnamed.Load()}
}
