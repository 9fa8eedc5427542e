// Package benchmarks measures cacheguard side by side with raw go-redis, raw
// ristretto and otter, and the libraries users would otherwise pick
// (go-zero's cache, rockscache, gocache, go-redis/cache, jetcache-go,
// rueidis and its rueidisaside, sturdyc), on one redis-server, the same
// rows and the same simulated database. It is its own module so that none
// of those libraries enter cacheguard's go.mod.
//
// Workloads: the Redis-hit and local-hit paths (also paired with their
// baselines in one loop), local-store hit ratio, zipfian reads over 100 000
// rows with and without a local tier, a stampede on one expiring key (in one
// process and across three re-executed processes), penetration by absent
// rows, mass expiry, the invalidation race, a cold storm of 10 000 missing
// rows, storms under a Redis restart, a FLUSHALL and a failover, CPU per
// Get, Redis memory per entry, and the Redis hit under
// concurrency: reads/s and p99 from 1 to 1,024 goroutines (the 64 and 256
// points also on a 3-master cluster), with go-redis's pool, its
// AutoPipeliner and a minimal read batcher side by side. run.sh runs them,
// summarises them with benchstat and writes RESULTS.md; README.md gives the method.
package benchmarks
