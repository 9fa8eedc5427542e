// Package binlog drives cache invalidation from a MySQL or MariaDB binlog:
// every row an INSERT, UPDATE or DELETE changes in a watched table becomes a
// delete of its cache keys, whoever wrote it (this service, another one, a
// migration, an operator at a SQL prompt).
//
// A Source tails the binlog with go-mysql's replication client (it registers
// as a replica, so the user needs replication privileges). Run first checks
// the server: log_bin=ON, binlog_format=ROW, binlog_row_image=FULL and
// binlog_row_metadata=FULL, failing with ErrServerSetting naming the one
// that is off. Rules map each watched table to a consistency.Target and to
// the keys of a row.
//
// Keys come from the column names each row event carries (that is what
// binlog_row_metadata=FULL is for), never from the table's current layout:
// a replay from a position before an ALTER TABLE that added, dropped or
// moved a column computes the keys the rows had when written. An event of a
// watched table without names (written before the setting was on) stops Run
// with ErrNoColumnNames, or with WithSkipUnnamedRows is logged, counted and
// skipped. No table is ever looked up on the server, so a renamed or dropped
// table cannot wedge a replay.
//
// Row events collect keys; at commits the keys are invalidated through the
// Target (Invalidate: a delete now, and a retry recorded in the durable
// queue if it fails), and only once they all are is the binlog position
// saved. Saves are batched (WithSaveEvery: when the binlog is idle, and at
// least every 1,000 transactions or 1 s), so a backlog is invalidated many
// transactions per round trip. While a delete keeps failing, tailing waits
// and retries; the position never moves past a change whose keys may still
// be cached. After a crash or restart, Run resumes from the saved position,
// so every change is invalidated at least once.
//
// TRUNCATE, DROP and RENAME of a watched table change rows without row
// events: Run calls the rule's Clear (ScanDelete: a batched SCAN and UNLINK
// over the cache's prefix) before moving past them; without a Clear they are
// logged and counted. Rule.SecondDelete adds a delayed second delete through
// the queue, for readers of lagging replicas.
//
//	src, err := binlog.New(binlog.Config{Addr: "db:3306", User: "repl", Password: pw, ServerID: 1001},
//		binlog.RedisPositions(rdb, "cacheguard:binlog:orders-svc"),
//		[]binlog.Rule{{Schema: "shop", Table: "users", Target: users, Keys: binlog.Column("id")}})
//	go src.Run(ctx)
//
// The module is separate from cacheguard's so that applications that do not
// tail a binlog do not depend on go-mysql.
package binlog
