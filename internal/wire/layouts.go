package wire

import (
	"strconv"
	"strings"
	"time"
)

// Layout is one kind of key (or channel) cacheguard writes to Redis, with an
// example built by the constructors of this package.
type Layout struct {
	Name  string // as `cacheguard inspect` reports it
	Type  string // the Redis type its key holds (TYPE's reply), or "channel"
	Key   string // an example key (or channel)
	Value string // for a string key, an example value
}

// The names of the layouts.
const (
	LayoutEntry           = "cache entry"
	LayoutCopy            = "hot-key copy"
	LayoutBarrier         = "replication barrier"
	LayoutLease           = "lease placeholder"
	LayoutTombstone       = "version tombstone"
	LayoutGeneration      = "cache generation"
	LayoutTag             = "tag invalidation time"
	LayoutFillChannel     = "fill channel"
	LayoutInvalChannel    = "invalidation channel"
	LayoutMutex           = "mutex"
	LayoutLockFence       = "lock fencing token"
	LayoutLockWaiters     = "mutex waiters"
	LayoutLockChannel     = "lock release channel"
	LayoutRWWriter        = "rwmutex writer"
	LayoutRWReaders       = "rwmutex readers"
	LayoutRWHolds         = "rwmutex reader holds"
	LayoutRWWriters       = "rwmutex queued writers"
	LayoutSemaphore       = "semaphore permits"
	LayoutQueueDue        = "queue due set"
	LayoutQueueData       = "queue entries"
	LayoutQueueClaims     = "queue claims"
	LayoutQueueDead       = "queue dead letters"
	LayoutQueueDeadCount  = "queue dead-letter counts"
	LayoutQueueWait       = "queue WAIT counter"
	LayoutStockMeta       = "stock bucket"
	LayoutStockReqs       = "stock request answers"
	LayoutStockUsers      = "stock units per user"
	LayoutStockOutbox     = "stock outbox"
	LayoutStockDue        = "stock hold expiries"
	LayoutStockXin        = "stock transfers credited"
	LayoutStockSales      = "stock sales"
	LayoutStockDead       = "stock dead letters"
	LayoutStockRate       = "stock admission budget"
	LayoutStockConsumer   = "stock consumer name"
	LayoutBloomCfg        = "bloom configuration"
	LayoutBloomBits       = "bloom bits"
	LayoutBloomNext       = "bloom rebuild bits"
	LayoutBloomDelta      = "bloom rebuild delta"
	LayoutBloomBuild      = "bloom rebuild lease"
	LayoutBloomSeq        = "bloom add sequence"
	LayoutBloomAdds       = "bloom adds channel"
	LayoutFleetWindow     = "hot-key fleet window"
	LayoutFleetTotal      = "hot-key fleet window total"
	LayoutRateLimitBudget = "key rate-limit budget"
	LayoutMembers         = "fleet members (budget shares)"
	LayoutBinlogPosition  = "binlog position and tailer lease"
)

// Layouts lists every layout of this package, entries after a Clear and
// queue shards past the first included. Tests iterate it: a key constructor,
// or a prefix or suffix constant, added to this package must be used here (a
// test of this package reads its source), and `cacheguard inspect` must
// recognise each key listed (a test of it walks the list).
func Layouts() []Layout {
	var tok [TokenSize]byte
	const prefix, base = "user:", "lock:{orders}"
	created := time.UnixMilli(1_764_000_000_000)
	held, _ := LockHeldOnce(7, "host-1:42")
	q, q3 := QueueKeys("wq", 0), QueueKeys("wq", 3)
	b := StockBucketKeys("sale:", "sku1", 2)
	skuRate, userRate := StockRateKeys("sale:", "sku1", "u7")
	bl := BloomFilterKeys("users")
	set, total := FleetKeys(HotKeyPrefix, "users", 29_400_000)
	return []Layout{
		{LayoutEntry, "string", EntryKey(prefix, 0, "42"), string(AppendEnvelope(nil, 0, 0, created, 0, []byte("v")))},
		{LayoutEntry, "string", EntryKey(prefix, 1_764_000_000_000_000, "42"), string(AppendEnvelope(nil, FlagNull, 0, created, 0, nil))},
		{LayoutEntry, "string", EntryKey(prefix, 0, "43"), string(AppendTaggedEnvelope(nil, 0, 0, created, 0, created, []string{"org:1"}, nil, []byte("v")))},
		{LayoutCopy, "string", CopyKey(prefix, EntryKey(prefix, 0, "42"), "0"), string(AppendEnvelope(nil, 0, 0, created, 0, []byte("v")))},
		{LayoutBarrier, "string", BarrierKey(prefix, EntryKey(prefix, 0, "42")), ""},
		{LayoutLease, "string", EntryKey(prefix, 0, "44"), Placeholder(tok)},
		{LayoutTombstone, "string", EntryKey(prefix, 0, "45"), string(AppendTombstone(nil, 9))},
		{LayoutGeneration, "string", GenerationKey(prefix), "1764000000000000"},
		{LayoutTag, "string", TagKey(prefix, "org:1"), FormatTagTime(created.UnixMilli())},
		{LayoutFillChannel, "channel", FillChannelPrefix + EntryKey(prefix, 0, "42"), ""},
		{LayoutInvalChannel, "channel", InvalidationChannelPrefix + prefix, ""},

		{LayoutMutex, "string", base, held},
		{LayoutMutex, "hash", base, ""},
		{LayoutLockFence, "string", base + LockFenceSuffix, "7"},
		{LayoutLockWaiters, "zset", base + LockWaitersSuffix, ""},
		{LayoutLockChannel, "channel", base + LockReleasedSuffix, ""},
		{LayoutRWWriter, "hash", base + LockRWSuffix, ""},
		{LayoutRWReaders, "zset", base + LockReadersSuffix, ""},
		{LayoutRWHolds, "hash", base + LockHoldsSuffix, ""},
		{LayoutRWWriters, "zset", base + LockWritersSuffix, ""},
		{LayoutLockChannel, "channel", base + LockRWSuffix + LockReleasedSuffix, ""},
		{LayoutSemaphore, "zset", base + LockSemaphoreSuffix, ""},

		{LayoutQueueDue, "zset", q.Due("users"), ""},
		{LayoutQueueDue, "zset", q3.Due("users"), ""},
		{LayoutQueueData, "hash", q.Data, ""},
		{LayoutQueueClaims, "hash", q3.Claims, ""},
		{LayoutQueueDead, "list", q.Dead, ""},
		{LayoutQueueDeadCount, "hash", q.DeadCount, ""},
		{LayoutQueueWait, "string", q.Wait, "3"},

		{LayoutStockMeta, "hash", b.Meta, ""},
		{LayoutStockReqs, "hash", b.Reqs, ""},
		{LayoutStockUsers, "hash", b.Users, ""},
		{LayoutStockOutbox, "stream", b.Outbox, ""},
		{LayoutStockDue, "zset", b.Due, ""},
		{LayoutStockXin, "set", b.Xin, ""},
		{LayoutStockSales, "hash", StockSalesKey("sale:"), ""},
		{LayoutStockDead, "stream", StockDeadKey("sale:"), ""},
		{LayoutStockConsumer, "string", StockConsumerKey("sale:", "stock", "host-1-42"), "0123456789abcdef"},
		{LayoutStockRate, "string", RateLimitStoredPrefix + skuRate, "1764000000.5"},
		{LayoutStockRate, "string", RateLimitStoredPrefix + userRate, "1764000000.5"},

		{LayoutBloomCfg, "string", bl.Cfg, BloomConfig(1024, 7, 1) + " " + bloomReady + "=1"},
		{LayoutBloomBits, "string", bl.Bits, "\x80\x01"},
		{LayoutBloomNext, "string", bl.Next, "\x80"},
		{LayoutBloomDelta, "string", bl.Delta, "\x01"},
		{LayoutBloomBuild, "string", bl.Build, "token"},
		{LayoutBloomSeq, "string", bl.Seq, "42"},
		{LayoutBloomAdds, "channel", bl.Adds, "42 " + BloomAdded + " \x00\x00\x00\x07"},

		{LayoutFleetWindow, "zset", set, ""},
		{LayoutFleetTotal, "string", total, "1234"},

		{LayoutRateLimitBudget, "string", RateLimitStoredPrefix + RateLimitKey(RateLimitPrefix, "read", "user:42"), "1764000000.5"},
		{LayoutMembers, "zset", MembersKey(RateLimitPrefix), ""},
		{LayoutBinlogPosition, "string", "cacheguard:binlog:orders-svc", string(FormatBinlogPosition("bin.000042", 1234))},
	}
}

// KeyLayout names the layout a key of Redis type typ follows, by its name and
// type alone. It names neither the layouts a string's value tells (cache
// entries, lease placeholders, tombstones, a Mutex's string) nor a Mutex's
// hash, whose name is any name with a hash tag: the caller reads the value.
// A namespace, a group or a prefix chosen by the user can make another
// program's key look like one of these.
func KeyLayout(key, typ string) (string, bool) {
	if ns, _, rest, ok := QueueKey(key); ok && ns != "" {
		switch {
		case typ == "zset" && strings.HasPrefix(rest, queueDue) && len(rest) > len(queueDue):
			return LayoutQueueDue, true
		case typ == "hash" && rest == queueData:
			return LayoutQueueData, true
		case typ == "hash" && rest == queueClaims:
			return LayoutQueueClaims, true
		case typ == "list" && rest == queueDead:
			return LayoutQueueDead, true
		case typ == "hash" && rest == queueDeadCount:
			return LayoutQueueDeadCount, true
		case typ == "string" && rest == queueWait:
			return LayoutQueueWait, true
		}
	}
	if n, ok := stockLayout(key, typ); ok {
		return n, true
	}
	if n, ok := bloomLayout(key, typ); ok {
		return n, true
	}
	switch {
	case typ == "string" && strings.HasPrefix(key, GenerationKeyPrefix):
		return LayoutGeneration, true
	case typ == "string" && IsBarrierKey(key):
		return LayoutBarrier, true
	case typ == "string" && strings.HasPrefix(key, TagKeyPrefix):
		if _, _, ok := ParseTagKey(key); ok {
			return LayoutTag, true
		}
	case typ == "zset" && strings.HasSuffix(key, ":"+membersSuffix):
		return LayoutMembers, true
	case strings.HasPrefix(key, HotKeyPrefix):
		return fleetLayout(key[len(HotKeyPrefix):], typ)
	case typ == "string" && strings.HasPrefix(key, RateLimitStoredPrefix+RateLimitPrefix):
		return LayoutRateLimitBudget, true
	case typ == "string" && strings.HasPrefix(key, RateLimitStoredPrefix) &&
		(strings.Contains(key, ":"+stockRateSKU) || strings.Contains(key, ":"+stockRateUser)):
		return LayoutStockRate, true
	}
	return lockLayout(key, typ)
}

// lockLayout names the keys of a lock beside its base, by their suffix.
func lockLayout(key, typ string) (string, bool) {
	if _, ok := HashTag(key); !ok {
		return "", false
	}
	for _, l := range []struct{ suffix, typ, name string }{
		{LockRWSuffix, "hash", LayoutRWWriter},
		{LockReadersSuffix, "zset", LayoutRWReaders},
		{LockHoldsSuffix, "hash", LayoutRWHolds},
		{LockWritersSuffix, "zset", LayoutRWWriters},
		{LockFenceSuffix, "string", LayoutLockFence},
		{LockWaitersSuffix, "zset", LayoutLockWaiters},
		{LockSemaphoreSuffix, "zset", LayoutSemaphore},
	} {
		if typ == l.typ && strings.HasSuffix(key, l.suffix) {
			return l.name, true
		}
	}
	return "", false
}

// stockLayout names a stock bucket's keys, {ns:sku:b}:<letter>, and a
// namespace's index of sales and dead letters.
func stockLayout(key, typ string) (string, bool) {
	switch {
	case typ == "hash" && strings.HasSuffix(key, ":sales") && len(key) > len(":sales"):
		return LayoutStockSales, true
	case typ == "stream" && strings.HasSuffix(key, ":dead") && !strings.HasPrefix(key, "{"):
		return LayoutStockDead, true
	case typ == "string" && strings.Contains(key, ":"+stockConsumers) && !strings.HasPrefix(key, "{"):
		return LayoutStockConsumer, true
	}
	tag, ok := HashTag(key)
	if !ok || !strings.HasPrefix(key, "{") || len(key) != len(tag)+4 || key[len(tag)+2] != ':' {
		return "", false
	}
	i := strings.LastIndexByte(tag, ':')
	if i < 0 || strings.IndexByte(tag[:i], ':') < 0 {
		return "", false
	}
	if _, err := strconv.Atoi(tag[i+1:]); err != nil {
		return "", false
	}
	for _, l := range []struct{ letter, typ, name string }{
		{"m", "hash", LayoutStockMeta}, {"r", "hash", LayoutStockReqs}, {"u", "hash", LayoutStockUsers},
		{"o", "stream", LayoutStockOutbox}, {"d", "zset", LayoutStockDue}, {"x", "set", LayoutStockXin},
	} {
		if typ == l.typ && key[len(key)-1:] == l.letter {
			return l.name, true
		}
	}
	return "", false
}

// bloomLayout names a filter's keys, {name}:<part>, all strings.
func bloomLayout(key, typ string) (string, bool) {
	if typ != "string" || !strings.HasPrefix(key, "{") {
		return "", false
	}
	end := strings.IndexByte(key, '}')
	if end <= 1 || strings.ContainsAny(key[1:end], "{") {
		return "", false
	}
	switch key[end+1:] {
	case bloomCfgSuffix:
		return LayoutBloomCfg, true
	case bloomBitsSuffix:
		return LayoutBloomBits, true
	case bloomNextSuffix:
		return LayoutBloomNext, true
	case bloomDeltaSuffix:
		return LayoutBloomDelta, true
	case bloomBuildSuffix:
		return LayoutBloomBuild, true
	case bloomSeqSuffix:
		return LayoutBloomSeq, true
	}
	return "", false
}

// fleetLayout names a fleet window's keys after the prefix:
// {group}:<window> (a zset) and {group}:<window>:total (a string).
func fleetLayout(rest, typ string) (string, bool) {
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	end := strings.IndexByte(rest, '}')
	if end <= 1 || !strings.HasPrefix(rest[end+1:], ":") {
		return "", false
	}
	win, isTotal := strings.CutSuffix(rest[end+2:], fleetTotalSuffix)
	if _, err := strconv.ParseInt(win, 10, 64); err != nil {
		return "", false
	}
	switch {
	case isTotal && typ == "string":
		return LayoutFleetTotal, true
	case !isTotal && typ == "zset":
		return LayoutFleetWindow, true
	}
	return "", false
}
