// Command cacheguard is an operator's tool for a Redis (or Redis Cluster)
// that cacheguard uses.
//
// Install it with
//
//	go install github.com/cacheguard/cacheguard/cmd/cacheguard@latest
//
// and run
//
//	cacheguard inspect -addr host:port [-json] [-max-keys n] ...
//
// inspect walks the keyspace with SCAN (never KEYS), a bounded number of
// keys per node, and reports what hurts a cache in production: the key-size
// histogram and the biggest keys, the TTL histogram of cacheguard's entries
// with a warning when many of them expire in the same second (an avalanche
// waiting to happen), lease placeholders stranded without an expiry, the
// write path's retry queue depth and dead letters, the fill ratio of Bloom
// filters, who holds locks, and for each binlog Source's saved position
// which instance tails and how long its lease has left (a lease that ran out
// is a tailer gone; a standby takes over). It counts every key of cacheguard
// by its layout (the "keys" of -json): entries, leases, tombstones,
// generations and tag times; mutexes, fencing tokens, waiters, read-write
// locks and semaphore permits; the queue's sets, hashes and counters; a
// flash sale's buckets, outboxes, indexes and admission budgets; Bloom
// filters and their rebuilds; hot-key fleet windows; key rate-limit budgets;
// binlog positions. A key is named by its value where the value tells (an
// entry is an entry under any name), else by its name and type, so a key of
// another program whose name follows a layout with a prefix it chose is
// counted too. Every reply is parsed defensively: keys of other programs are
// counted by size and otherwise left alone.
//
// It reads cacheguard's byte formats and key layouts through the same
// package the library writes them with, so a report never disagrees with
// the library about what a key holds.
//
// The flags of inspect:
//
//	-addr       Redis address host:port, comma-separated cluster nodes, or a
//	            redis:// URL (default $REDIS_URL)
//	-json       print the report as JSON
//	-max-keys   stop scanning a node after this many keys (1,000,000)
//	-count      SCAN COUNT hint: keys examined per round trip (500)
//	-top        how many of the biggest keys to list (10)
//	-burst      warn when this many cache entries expire within one second (100)
//	-big        bytes from which a key is reported as big (1 MiB)
//	-max-lease  a lease placeholder with a longer TTL (or none) is stranded (1m)
//	-timeout    bound on the whole scan (10m)
//	-progress   show a progress line on stderr during long scans (true)
//
// The exit code is 0 when a report was printed (its warnings are in it), 1
// when the scan failed (Redis unreachable, the timeout passed), and 2 for bad
// flags.
package main
