// Package redistest starts real redis-server processes for tests: a single node,
// a three-master Redis Cluster, a Sentinel topology (master, replica, three
// Sentinels, with a planned failover and a killed master), or N independent
// nodes (for Redlock), each on a free loopback port in its own temporary
// directory, stopped when the test ends.
//
// Where no redis-server is on PATH, Single falls back to an in-process miniredis
// and the cluster and multi-node helpers skip the test, saying why. Setting
// CACHEGUARD_REQUIRE_REDIS=1 (CI does) turns both the fallback and the skips into
// failures, so a CI machine without redis-server cannot pass by accident.
//
// Servers shared by a whole test binary (SharedSingle, SharedCluster,
// SharedSentinel; the package's TestMain calls Main) keep tests fast; a test
// on them runs on each with OnTopologies and keeps to its own keys with
// Prefix or Name, which are new for each run of a test (-count), so that
// no run meets what an earlier one left. A package's tests name these once, as
//
//	var onTopologies, prefixFor = redistest.OnTopologies, redistest.Prefix
//
// Every layout also starts with TLS only (StartTLS, StartClusterTLS,
// StartClusterWithReplicasTLS, StartSentinelTLS, TLSTopologies): the
// servers listen on tls-port alone (port 0), replicate, gossip on the
// cluster bus and talk to the Sentinels over TLS, and require a client
// certificate; the certificate authority and the certificate every server
// and client presents (for 127.0.0.1, ::1 and localhost) are made in Go
// once per test binary, and ClientTLS is the clients' configuration. The
// layouts' own clients and their failover helpers use it. A redis-server
// built without TLS skips these tests (NeedTLS), or fails them under
// CACHEGUARD_REQUIRE_REDIS=1.
//
// Readiness is polled (PING, CLUSTER INFO) with a deadline; that is waiting for
// a process to come up, not synchronising the code under test.
package redistest
