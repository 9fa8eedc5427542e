// Package pubsub is cacheguard's one subscriber: one pub/sub connection per
// Redis node per go-redis client, shared by every cache and lock client built
// on that client, carrying lock release notifications, cache fill
// notifications and local-tier invalidations.
//
// The model:
//
//   - Acquire returns the Hub of a go-redis client (one per client in the
//     process, reference-counted); Release gives it back, and the last Release
//     closes its connections. Subscribe adds a Handler to a channel; the
//     channel is subscribed once, whatever the number of handlers, on the
//     connection of the node that serves it: the one server of a single node
//     or a Sentinel's master, the master owning the channel's slot on a
//     cluster (shard channels), a channel of its own on a Ring. A connection
//     exists while it carries a channel; it is opened by its first and closed
//     with its last.
//   - Each connection runs sessions on one goroutine. A session is a new
//     PubSub (so a new dial, to the node's current address), each channel
//     subscribed with a command of its own (a cluster refuses one SSUBSCRIBE
//     for channels of different slots, so go-redis's own resubscription is
//     never relied on), then checked by a PING every health interval, whose
//     reply must arrive within the health timeout. Anything wrong ends the
//     session: every handler on it hears Down (a message may have been lost),
//     and after a backoff the next session dials the node that serves the
//     channels now, which on a cluster may be another master.
//   - A subscription is trusted only on the channel's master: writers publish
//     there, and a PING answered by any other node proves nothing about what
//     the master published. On a cluster and under Sentinel the session asks
//     its node ROLE when the first subscription is confirmed and after every
//     health PING; under Sentinel it also asks which node is the master now
//     (the address go-redis's failover client dials, from
//     SENTINEL GET-MASTER-ADDR-BY-NAME) and ends the session when it is not
//     the node subscribed on: after a planned failover the demoted master goes
//     on answering PINGs, and ROLE with "master", for seconds.
//   - Up tells a handler that every message published on its channel after a
//     given time will be delivered; Healthy, after a health reply, that every
//     message published before the PING was sent has been. A server that ends
//     a subscription on its own (a cluster slot moved) moves that channel to
//     the master now serving it, with Down before and Up after.
//
// Trackers (track.go) add Redis's server-assisted invalidation: while a Hub
// has one, every master has a connection of the Hub, armed when dialled with
// CLIENT TRACKING in broadcasting mode for the Trackers' prefixes, redirected
// to itself and subscribed to __redis__:invalidate; a Tracker is up while
// every master's is. A Hub without Trackers sends none of it.
//
// Every connection is made the way the go-redis client makes its own: with
// its options (TLS settings, username and password, Dialer) and, under
// Sentinel, through the failover client's dialer, which asks the Sentinels
// with the client's TLS settings, Sentinel credentials and Dialer; the ROLE
// check's connection too, which refuses to open on any node but the one
// subscribed on.
//
// Pub/sub delivers at most once: users keep a fallback (polling, a bounded
// trust) for messages lost while no session is up.
package pubsub
