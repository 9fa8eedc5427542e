package main

import "time"

// Report is what inspect found; -json prints it as is.
type Report struct {
	Nodes       []string  `json:"nodes"`
	Time        time.Time `json:"time"`         // the first node's clock when the scan began
	Scanned     int64     `json:"scanned"`      // keys examined, all nodes
	Truncated   bool      `json:"truncated"`    // -max-keys stopped the scan on some node
	MemoryUsage bool      `json:"memory_usage"` // sizes come from MEMORY USAGE (else STRLEN, strings only)

	Sizes   []Bucket `json:"sizes"`   // every scanned key by size
	Biggest []BigKey `json:"biggest"` // the largest, biggest first

	Entries Entries `json:"entries"` // cacheguard cache entries
	Leases  Leases  `json:"leases"`

	Queues      []Queue      `json:"queues,omitempty"`
	DeadLetters []DeadLetter `json:"dead_letters,omitempty"`
	Blooms      []Bloom      `json:"blooms,omitempty"`
	Locks       []Lock       `json:"locks,omitempty"`
	Tags        []TagKey     `json:"tags,omitempty"` // tag invalidation times (InvalidateTags)
	Binlogs     []Binlog     `json:"binlogs,omitempty"`

	// Keys counts cacheguard's keys by layout, named as internal/wire
	// names them (wire.Layouts): every key recognised, whether or not a
	// section above details it.
	Keys map[string]int64 `json:"keys,omitempty"`

	Warnings []string `json:"warnings,omitempty"`
	Errors   []string `json:"errors,omitempty"` // replies that could not be read; the scan went on
}

// TagKey is the invalidation time of one tag of one cache.
type TagKey struct {
	Prefix      string    `json:"prefix"`
	Tag         string    `json:"tag"`
	Invalidated time.Time `json:"invalidated"`
	TTL         int64     `json:"ttl_ms"` // how long it is kept
}

// Bucket is one histogram bar: keys whose measure is below Below (the last
// bucket has no bound: Below is 0).
type Bucket struct {
	Label string `json:"label"`
	Below int64  `json:"below,omitempty"`
	Count int64  `json:"count"`
	Bytes int64  `json:"bytes,omitempty"`
}

// BigKey is one of the largest keys.
type BigKey struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Bytes int64  `json:"bytes"`
	Node  string `json:"node"`
}

// Entries summarises the cache envelopes found.
type Entries struct {
	Count      int64    `json:"count"`
	Null       int64    `json:"null"`       // cached absences
	Compressed int64    `json:"compressed"` // payload compressed
	Stale      int64    `json:"stale"`      // marked stale, serving while one caller reloads
	Refreshing int64    `json:"refreshing"` // a reload (early refresh or of a stale entry) is under way
	Tombstones int64    `json:"tombstones"` // version tombstones: deleted, version kept against older writes
	Tagged     int64    `json:"tagged"`     // entries carrying tags (Values.Tags)
	Copies     int64    `json:"copies"`     // hot-key copies on other masters (cache.WithHotKeyCopies), not counted above
	NoTTL      int64    `json:"no_ttl"`     // no expiry: never refreshed unless written
	TTLs       []Bucket `json:"ttls"`
	// BusiestSecond is the one-second window in which most entries expire.
	BusiestSecond     time.Time `json:"busiest_second,omitempty"`
	BusiestSecondKeys int64     `json:"busiest_second_keys"`
}

// Leases summarises fill lease placeholders.
type Leases struct {
	InFlight int64      `json:"in_flight"` // placeholders with an ordinary lease TTL
	Stranded []Stranded `json:"stranded"`  // placeholders without expiry, or with one past -max-lease
}

// Stranded is a placeholder that will not go away soon by itself: readers of
// its key wait for a fill that may never come.
type Stranded struct {
	Key   string `json:"key"`
	Shape string `json:"shape"`  // which placeholder shape (waited on, kept a version)
	TTLms int64  `json:"ttl_ms"` // -1: no expiry
	Node  string `json:"node"`
}

// Queue is one target's retry queue of the write path.
type Queue struct {
	Prefix string `json:"prefix"`
	Shard  int    `json:"shard"` // the queue prefix's shard (consistency.WithShards)
	Target string `json:"target"`
	Depth  int64  `json:"depth"` // recorded deletes not yet done
	Due    int64  `json:"due"`   // of which due now (or claimed and overdue)
}

// DeadLetter counts a queue prefix's dead letters.
type DeadLetter struct {
	Prefix string `json:"prefix"`
	Shard  int    `json:"shard"`
	Kept   int64  `json:"kept"`  // in the capped list
	Total  int64  `json:"total"` // ever, all targets
}

// Bloom is one shared Bloom filter.
type Bloom struct {
	Name      string  `json:"name"`
	M         uint64  `json:"m"`
	K         uint64  `json:"k"`
	Ready     bool    `json:"ready"`
	BitsSet   int64   `json:"bits_set"`
	FillRatio float64 `json:"fill_ratio"`
}

// Lock is a held lock.
// Binlog is a binlog Source's saved position (RedisPositions) and the
// lease of its fleet's tailer.
type Binlog struct {
	Key    string `json:"key"`
	File   string `json:"file,omitempty"` // "" before the first save
	Offset uint32 `json:"offset,omitempty"`
	Tailer string `json:"tailer,omitempty"` // the token of the instance that tails; "" when none holds the lease
	// LeaseMS is how long the tailer's lease has left (ms, by the server's
	// clock); 0 or less: it ran out, and another instance takes over.
	LeaseMS int64 `json:"lease_ms"`
}

type Lock struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"` // mutex, mutex (unfenced), rwmutex (writer), readers
	Owner string `json:"owner,omitempty"`
	Holds int64  `json:"holds"`
	Token string `json:"token,omitempty"`
	TTLms int64  `json:"ttl_ms"`
}
