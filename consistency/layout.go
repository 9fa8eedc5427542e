package consistency

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	randv2 "math/rand/v2"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The queue's Redis keys: wire.Queue, one per shard (WithShards, 1 by
// default), each shard's keys under one hash tag ({ns} for shard 0, {ns:i}
// for shard i), so that every script, which only ever touches one shard, can
// touch several of them on a Redis Cluster, and the shards spread the queue
// over as many slots. One sorted set per target means an instance only ever
// claims entries of targets it has registered, so it never holds a delete it
// cannot run.
type layout = wire.Queue

func newLayout(ns string, shard int) layout { return wire.QueueKeys(ns, shard) }

// shardOf is the shard entry id lives in: the same for every write of it,
// so that Update moving its due time finds it.
func shardOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// entry is one recorded delete: the keys of one target, and how it fared.
type entry struct {
	Keys     []string `json:"k"`
	Attempts int      `json:"a,omitempty"` // failed attempts so far
	Err      string   `json:"e,omitempty"` // the last failure
}

func (e entry) encode() string {
	b, _ := json.Marshal(e) // strings and ints only: cannot fail
	return string(b)
}

func decodeEntry(s string) (entry, error) {
	var e entry
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return e, kind.Errorf("cacheguard: consistency: corrupt queue entry: %w", err)
	}
	if len(e.Keys) == 0 {
		return e, fmt.Errorf("cacheguard: consistency: corrupt queue entry: no keys")
	}
	return e, nil
}

// DeadLetter is a delete that still failed after the retry budget. The keys
// may hold stale values until their TTL runs out; an operator can delete them
// by hand or call Target.Invalidate again once the cause is fixed.
type DeadLetter struct {
	ID       string    `json:"id"`
	Target   string    `json:"target"`
	Keys     []string  `json:"keys"`
	Attempts int       `json:"attempts"`
	Err      string    `json:"err"`
	Time     time.Time `json:"time"`
}

// newID returns a random entry id (also used as a claim token).
func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back
		// rather than panic.
		for i := range b {
			b[i] = byte(randv2.Uint32())
		}
	}
	return hex.EncodeToString(b[:])
}
