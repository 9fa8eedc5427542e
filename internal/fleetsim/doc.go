// Package fleetsim holds the fleet simulation: N cache instances, each with
// its own Redis client, hot-key detector (with the fleet view) and local tier,
// read a zipfian key space on a three-master Redis Cluster with replicas, and
// the run reports, per node, commands per second and connections (pub/sub
// and all), with the hot-key detection latency and the share of reads that
// reached Redis. It has no code outside its test; see docs/scale.md for the
// figures and
//
//	go test ./internal/fleetsim -run TestFleet -v -fleet.n=1,10,100
//
// Without -fleet.n the test runs a small form (5 instances, 5 s, a threshold of 50 reads per window) that CI
// can afford.
package fleetsim
