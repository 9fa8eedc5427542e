// Package binlog drives cache invalidation from a MySQL or MariaDB binlog:
// every row an INSERT, UPDATE or DELETE changes in a watched table becomes a
// delete of its cache keys, whoever wrote it (this service, another one, a
// migration, an operator at a SQL prompt).
//
// A Source tails the binlog in ROW format with go-mysql's canal (it registers
// as a replica, so the server needs log_bin and binlog_format=ROW, and the
// user replication privileges). Rules map each watched table to a
// consistency.Target and to the keys of a row. Row events collect keys; at
// each commit the keys are invalidated through the Target (Invalidate: a
// delete now, and a retry recorded in the durable queue if it fails), and
// only once they all are is the binlog position saved. While a delete keeps
// failing, tailing waits and retries; the position never moves past a change
// whose keys may still be cached. After a crash or restart, Run resumes from
// the saved position, so every change is invalidated at least once.
//
//	src, err := binlog.New(binlog.Config{Addr: "db:3306", User: "repl", Password: pw, ServerID: 1001},
//		binlog.RedisPositions(rdb, "cacheguard:binlog:orders-svc"),
//		[]binlog.Rule{{Schema: "shop", Table: "users", Target: users, Keys: binlog.Column("id")}})
//	go src.Run(ctx)
//
// The module is separate from cacheguard's so that applications that do not
// tail a binlog do not depend on go-mysql.
package binlog
