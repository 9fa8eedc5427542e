package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// Cache entries. An entry's key is the cache's prefix followed by the user's
// key. A fill publishes on FillChannelPrefix + key on a single node, and on a
// shard channel named exactly like the key on a Redis Cluster (so that it
// hashes to the key's slot, as a script's commands must). Invalidations of a
// local tier go on InvalidationChannelPrefix + the cache's prefix.
const (
	FillChannelPrefix         = "cacheguard:filled:"
	InvalidationChannelPrefix = "cacheguard:invalidate:"
)

// HashTag returns the hash tag Redis Cluster hashes key by: the part between
// the first '{' and the first '}' after it, if not empty.
func HashTag(key string) (tag string, ok bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// Locks. Every key of one lock starts with its base, prefix + "{" + name +
// "}", or prefix + name when the name carries its own hash tag
// ("orders:{42}:lock"), so that all of them share one hash tag:
//
//	base                string: a Mutex (and Redlock, per node), see lock.go;
//	                    hash owner, n, token, w: the same lock as the hash layout wrote it
//	base:fence          last fencing token, expires with the lease  RWMutex writer
//	base:released       channel announcing Mutex releases
//	base:waiters        zset: client id -> expiry (ms)        clients waiting for the Mutex
//	base:rw             hash: owner, n, token                 RWMutex writer
//	base:readers        zset: owner -> lease expiry (ms)      RWMutex readers
//	base:holds          hash: owner -> hold count             RWMutex readers
//	base:writers        zset: waiting writer -> expiry (ms)   RWMutex writers queued ahead of readers
//	base:rw:released    channel announcing RWMutex releases
//	base:sem            zset: permit -> lease expiry (ms)     Semaphore
const (
	LockFenceSuffix     = ":fence"
	LockReadersSuffix   = ":readers"
	LockHoldsSuffix     = ":holds"
	LockReleasedSuffix  = ":released"
	LockWaitersSuffix   = ":waiters"
	LockRWSuffix        = ":rw"
	LockWritersSuffix   = ":writers"
	LockSemaphoreSuffix = ":sem"

	LockFieldOwner  = "owner"
	LockFieldHolds  = "n"
	LockFieldToken  = "token"
	LockFieldWaited = "w"
)

// Kinds of lock key, as LockKey tells them.
const (
	LockMutex   = "mutex"
	LockRWMutex = "rwmutex"
	LockReaders = "readers"
)

// LockKey tells which lock key might be: the base of a Mutex, the writer hash
// of an RWMutex or its readers' set, and the lock's base. Only the name is
// read: the caller checks the value (a hash with an owner, a count).
func LockKey(key string) (base, kind string, ok bool) {
	if _, ok := HashTag(key); !ok {
		return "", "", false
	}
	switch {
	case strings.HasSuffix(key, LockRWSuffix):
		return strings.TrimSuffix(key, LockRWSuffix), LockRWMutex, true
	case strings.HasSuffix(key, LockReadersSuffix):
		return strings.TrimSuffix(key, LockReadersSuffix), LockReaders, true
	}
	for _, s := range []string{LockFenceSuffix, LockHoldsSuffix, LockWaitersSuffix, LockWritersSuffix, LockSemaphoreSuffix} {
		if strings.HasSuffix(key, s) {
			return "", "", false
		}
	}
	return key, LockMutex, true
}

// Queue is the Redis layout of one shard of the write path's retry queue. The
// queue is split into shards, each with its own hash tag, so that every
// script (which touches one shard) is cluster safe and the shards spread
// over as many slots: shard 0 is tagged {ns}, shard i > 0 {ns:i}. Per shard:
//
//	{ns}:due:<target>  sorted set: entry id -> due time (Unix ms); a claimed
//	                   entry's score is its claim's visibility deadline
//	{ns}:data          hash: entry id -> entry (JSON)
//	{ns}:claims        hash: entry id -> token of the claim that holds it
//	{ns}:dead          list of dead letters (JSON), newest first, capped
//	{ns}:dead:count    hash: target -> number of dead letters ever
//	{ns}:wait          counter a writer increments before WAIT (shard 0)
type Queue struct {
	Prefix, Data, Claims, Dead, DeadCount, Wait string
}

const (
	queueDue       = "due:"
	queueData      = "data"
	queueClaims    = "claims"
	queueDead      = "dead"
	queueDeadCount = "dead:count"
	queueWait      = "wait"
)

// QueueKeys returns the keys of shard of namespace ns.
func QueueKeys(ns string, shard int) Queue {
	tag := ns
	if shard > 0 {
		tag = ns + ":" + strconv.Itoa(shard)
	}
	p := "{" + tag + "}:"
	return Queue{Prefix: p, Data: p + queueData, Claims: p + queueClaims, Dead: p + queueDead, DeadCount: p + queueDeadCount, Wait: p + queueWait}
}

// Due returns the key of target's sorted set of due entries.
func (q Queue) Due(target string) string { return q.Prefix + queueDue + target }

// QueueKey splits a key of the retry queue: its namespace and shard, and
// what follows "}:" ("due:<target>", "data", "dead"…). A tag "{a:3}" is read
// as namespace a, shard 3 (a namespace may itself end in ":<digits>": the
// layout cannot tell, and reads it as a shard).
func QueueKey(key string) (ns string, shard int, rest string, ok bool) {
	if !strings.HasPrefix(key, "{") {
		return "", 0, "", false
	}
	end := strings.IndexByte(key, '}')
	if end <= 1 || !strings.HasPrefix(key[end+1:], ":") {
		return "", 0, "", false
	}
	tag, rest := key[1:end], key[end+2:]
	if i := strings.LastIndexByte(tag, ':'); i > 0 {
		if n, err := strconv.Atoi(tag[i+1:]); err == nil && n > 0 && strconv.Itoa(n) == tag[i+1:] {
			return tag[:i], n, rest, true
		}
	}
	return tag, 0, rest, true
}

// QueueDue splits a queue's due key, "{ns}:due:<target>" or
// "{ns:i}:due:<target>".
func QueueDue(key string) (ns string, shard int, target string, ok bool) {
	ns, shard, rest, ok := QueueKey(key)
	if !ok || !strings.HasPrefix(rest, queueDue) || len(rest) == len(queueDue) {
		return "", 0, "", false
	}
	return ns, shard, rest[len(queueDue):], true
}

// QueueDead tells whether key is a queue's dead-letter list, and whose.
func QueueDead(key string) (ns string, shard int, ok bool) {
	ns, shard, rest, ok := QueueKey(key)
	return ns, shard, ok && rest == queueDead
}

// Stock. ns is the prefix every key of a stock namespace starts with
// (stock.WithPrefix, "cacheguard:stock:" by default), the separator
// included. Every key of one bucket of one SKU shares the hash tag
// {<ns><sku>:b}, so each script touches a single slot; different buckets
// have different tags and so spread over a cluster.
//
//	{<ns><sku>:b}:m  hash   the bucket's counters and the sale's settings
//	{<ns><sku>:b}:r  hash   request id -> first answer (JSON)
//	{<ns><sku>:b}:u  hash   user -> units held in this sale
//	{<ns><sku>:b}:o  stream the outbox: one entry per state change
//	{<ns><sku>:b}:d  zset   request id -> due time (ms, Redis clock) of the hold
//	{<ns><sku>:b}:x  set    ids of stock transfers already credited to this bucket
//	<ns>sales        hash   sku -> bucket count: the sales a consumer drains
//	<ns>dead         stream dead letters of every sale
//	<ns>consumers:<group>:<name>  string  the token of the live consumer of that name
type StockBucket struct {
	Meta, Reqs, Users, Outbox, Due, Xin string
}

// StockBucketTag is the hash tag of bucket b of sku.
func StockBucketTag(ns, sku string, b int) string {
	return "{" + ns + sku + ":" + strconv.Itoa(b) + "}"
}

// StockBucketKeys returns the keys of bucket b of sku.
func StockBucketKeys(ns, sku string, b int) StockBucket {
	t := StockBucketTag(ns, sku, b)
	return StockBucket{Meta: t + ":m", Reqs: t + ":r", Users: t + ":u", Outbox: t + ":o", Due: t + ":d", Xin: t + ":x"}
}

// StockSalesKey and StockDeadKey are a stock namespace's index of sales and
// its dead letters.
func StockSalesKey(ns string) string { return ns + "sales" }
func StockDeadKey(ns string) string  { return ns + "dead" }

// StockConsumerKey holds the token of the live consumer that goes by name in
// group (a string with a lease as its TTL): a second consumer started under
// that name while the first lives takes a name of its own.
func StockConsumerKey(ns, group, name string) string {
	return ns + stockConsumers + group + ":" + name
}

const stockConsumers = "consumers:"

// Bloom filters. A filter's keys share the hash tag {name}:
//
//	{name}:cfg    string "m=<bits> k=<hashes> v=<scheme> ready=0|1"
//	{name}:bits   the bitmap
//	{name}:next   the bitmap a rebuild is writing
//	{name}:delta  keys added while a rebuild runs
//	{name}:build  the rebuild's lease
//	{name}:seq    the number of the last add told on {name}:adds (fleet filters)
//	{name}:adds   the channel a fleet filter tells its adds on (BloomAddsMessage)
type BloomKeys struct {
	Cfg, Bits, Next, Delta, Build, Seq, Adds string
}

const (
	bloomCfgSuffix   = ":cfg"
	bloomBitsSuffix  = ":bits"
	bloomNextSuffix  = ":next"
	bloomDeltaSuffix = ":delta"
	bloomBuildSuffix = ":build"
	bloomSeqSuffix   = ":seq"
	bloomAddsSuffix  = ":adds"
)

// BloomFilterKeys returns the keys of the filter called name.
func BloomFilterKeys(name string) BloomKeys {
	t := "{" + name + "}"
	return BloomKeys{Cfg: t + bloomCfgSuffix, Bits: t + bloomBitsSuffix, Next: t + bloomNextSuffix, Delta: t + bloomDeltaSuffix,
		Build: t + bloomBuildSuffix, Seq: t + bloomSeqSuffix, Adds: t + bloomAddsSuffix}
}

// A fleet filter's add message, published by the add script on {name}:adds:
// "<seq> <kind> <offsets>", seq the add's number (INCR of {name}:seq), kind
// BloomAdded or BloomRebuilt (the bitmap was swapped: read it again), and
// the added keys' bit offsets, big-endian uint32 each.
const (
	BloomAdded   = "a"
	BloomRebuilt = "r"
)

// ParseBloomAdds reads an add message.
func ParseBloomAdds(msg string) (seq uint64, kind string, offsets string, ok bool) {
	head, rest, ok := strings.Cut(msg, " ")
	if !ok {
		return 0, "", "", false
	}
	kind, offsets, ok = strings.Cut(rest, " ")
	if !ok || (kind != BloomAdded && kind != BloomRebuilt) || len(offsets)%4 != 0 {
		return 0, "", "", false
	}
	seq, err := strconv.ParseUint(head, 10, 64)
	return seq, kind, offsets, err == nil && seq > 0
}

// BloomName tells whether key is a filter's configuration key, and whose.
func BloomName(key string) (name string, ok bool) {
	if !strings.HasPrefix(key, "{") || !strings.HasSuffix(key, "}"+bloomCfgSuffix) {
		return "", false
	}
	name = key[1 : len(key)-len("}"+bloomCfgSuffix)]
	if name == "" || strings.ContainsAny(name, "{}") {
		return "", false
	}
	return name, true
}

// The fields of a filter's configuration value.
const (
	bloomM     = "m"
	bloomK     = "k"
	bloomV     = "v"
	bloomReady = "ready"
)

// BloomConfig is the configuration value of a filter of m bits and k hash
// functions mapping keys to bits by scheme, without its ready flag, which the
// scripts append (BloomLua).
func BloomConfig(m, k uint64, scheme int) string {
	return fmt.Sprintf("%s=%d %s=%d %s=%d", bloomM, m, bloomK, k, bloomV, scheme)
}

// BloomLua is the prelude of the filter scripts: the ready flag as they
// append it to a configuration (NOT_READY, READY) and a pattern that
// matches it (READY_PATTERN).
const BloomLua = `
local NOT_READY, READY, READY_PATTERN = ' ` + bloomReady + `=0', ' ` + bloomReady + `=1', ' ` + bloomReady + `=%d$'
`

// ParseBloomConfig parses a filter's configuration value.
func ParseBloomConfig(s string) (m, k uint64, ready, ok bool) {
	var haveM bool
	for _, f := range strings.Fields(s) {
		name, val, found := strings.Cut(f, "=")
		if !found {
			continue
		}
		switch name {
		case bloomM:
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil || n == 0 {
				return 0, 0, false, false
			}
			m, haveM = n, true
		case bloomK:
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return 0, 0, false, false
			}
			k = n
		case bloomReady:
			ready = val == "1"
		}
	}
	return m, k, ready, haveM
}

// Fleet hot keys. The detectors of one group add their counts of a window
// (numbered from the Unix epoch by the Redis server's clock) to one sorted
// set and its total, under the group as hash tag: one Cluster slot per group.
// Every key starts with the detector's prefix (hotkey.WithPrefix,
// HotKeyPrefix by default).
const (
	HotKeyPrefix     = "cacheguard:hotkey:"
	fleetTotalSuffix = ":total"
)

// FleetKeys returns the sorted set and the total of group's window under
// prefix.
func FleetKeys(prefix, group string, window int64) (set, total string) {
	base := prefix + "{" + group + "}:" + strconv.FormatInt(window, 10)
	return base, base + fleetTotalSuffix
}

// Key rate limits. A limiter's budget of one operation ("read", "load") on
// one cache key is given to the GCRA limiter of go-redis/redis_rate as
// prefix + op + ":" + key, which stores it (a string) under
// RateLimitStoredPrefix + that key.
const (
	RateLimitPrefix       = "cacheguard:ratelimit:"
	RateLimitStoredPrefix = "rate:"
)

// MembersKey is the sorted set the instances of a fleet that shares budgets
// under prefix beat into (internal/members): ratelimit's prefix, stock's
// with "rate:".
func MembersKey(prefix string) string { return prefix + membersSuffix }

const membersSuffix = "members"

// RateLimitKey returns the key of op's budget on key under prefix.
func RateLimitKey(prefix, op, key string) string { return prefix + op + ":" + key }

// Stock admission. A sale's budgets are given to the same GCRA limiter (and
// so stored under RateLimitStoredPrefix + the key), each under the SKU as
// hash tag: <ns>rl:s:{sku} is the SKU's, <ns>rl:u:{sku}:user one user's.
const (
	stockRateSKU  = "rl:s:{"
	stockRateUser = "rl:u:{"
)

// StockRateKeys returns the keys of sku's budget and of user's in it.
func StockRateKeys(ns, sku, user string) (perSKU, perUser string) {
	return ns + stockRateSKU + sku + "}", ns + stockRateUser + sku + "}:" + user
}
