package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The second round of a batch: what each kind of recognised key needs read.

// followUp is a second-round read: queue adds commands to the pipeline, done
// reads their replies.
type followUp struct {
	queue func(redis.Pipeliner)
	done  func()
}

func (s *scanner) bloom(ctx context.Context, name, cfgKey string) followUp {
	var cfg *redis.StringCmd
	var bits *redis.IntCmd
	bitsKey := wire.BloomFilterKeys(name).Bits
	return followUp{
		queue: func(p redis.Pipeliner) {
			cfg = p.Get(ctx, cfgKey)
			bits = p.BitCount(ctx, bitsKey, nil)
		},
		done: func() {
			v, err := cfg.Result()
			if err != nil {
				return
			}
			m, k, ready, ok := wire.ParseBloomConfig(v)
			if !ok {
				return
			}
			set, err := bits.Result()
			if err != nil {
				s.errorf("BITCOUNT %q: %v", bitsKey, err)
				return
			}
			b := Bloom{Name: name, M: m, K: k, Ready: ready, BitsSet: set, FillRatio: float64(set) / float64(m)}
			s.rep.Blooms = append(s.rep.Blooms, b)
		},
	}
}

func (s *scanner) queue(ns string, shard int, target, key string, now time.Time) followUp {
	var depth, due *redis.IntCmd
	return followUp{
		queue: func(p redis.Pipeliner) {
			depth = p.ZCard(context.Background(), key)
			due = p.ZCount(context.Background(), key, "-inf", fmt.Sprint(now.UnixMilli()))
		},
		done: func() {
			d, err1 := depth.Result()
			n, err2 := due.Result()
			if err1 != nil || err2 != nil {
				s.errorf("queue %q: %v %v", key, err1, err2)
				return
			}
			s.rep.Queues = append(s.rep.Queues, Queue{Prefix: ns, Shard: shard, Target: target, Depth: d, Due: n})
		},
	}
}

func (s *scanner) dead(ns string, shard int, key string) followUp {
	var kept *redis.IntCmd
	var newest *redis.StringCmd
	var counts *redis.MapStringStringCmd
	return followUp{
		queue: func(p redis.Pipeliner) {
			kept = p.LLen(context.Background(), key)
			newest = p.LIndex(context.Background(), key, 0)
			counts = p.HGetAll(context.Background(), key+":count")
		},
		done: func() {
			n, err := kept.Result()
			if err != nil {
				s.errorf("dead letters %q: %v", key, err)
				return
			}
			if v, err := newest.Result(); err != nil || !isDeadLetter(v) {
				return // not the write path's list
			}
			dl := DeadLetter{Prefix: ns, Shard: shard, Kept: n}
			m, _ := counts.Result()
			for _, v := range m {
				var c int64
				if _, err := fmt.Sscan(v, &c); err == nil && c > 0 {
					dl.Total += c
				}
			}
			s.rep.DeadLetters = append(s.rep.DeadLetters, dl)
		},
	}
}

func (s *scanner) lock(key, kind string, ttl int64) followUp {
	var f *redis.SliceCmd
	return followUp{
		queue: func(p redis.Pipeliner) {
			f = p.HMGet(context.Background(), key, wire.LockFieldOwner, wire.LockFieldHolds, wire.LockFieldToken)
		},
		done: func() {
			vals, err := f.Result()
			if err != nil || len(vals) != 3 {
				return
			}
			owner, ok := vals[0].(string)
			if !ok { // not a lock hash after all
				return
			}
			n, ok1 := vals[1].(string)
			token, ok2 := vals[2].(string)
			l := Lock{Key: key, Kind: kind, Owner: owner, Token: token, TTLms: ttl}
			if _, err := fmt.Sscan(n, &l.Holds); !ok1 || !ok2 || err != nil || l.Holds < 1 {
				return // some other program's hash
			}
			s.rep.Locks = append(s.rep.Locks, l)
			if kind == wire.LockMutex { // a writer's hash is counted by its name
				s.count(wire.LayoutMutex)
			}
		},
	}
}

// binlog reads the whole of a value that starts like a binlog position
// (wire.BinlogCandidate) and reports it if it is one.
func (s *scanner) binlog(key string, now time.Time) followUp {
	var v *redis.StringCmd
	return followUp{
		queue: func(p redis.Pipeliner) { v = p.Get(context.Background(), key) },
		done: func() {
			b, err := v.Bytes()
			if err != nil {
				return
			}
			p, ok := wire.ParseBinlogPosition(b)
			if !ok || (p.File == "" && p.Tailer == "") {
				return // some other program's JSON
			}
			row := Binlog{Key: key, File: p.File, Offset: p.Offset, Tailer: p.Tailer}
			if p.Tailer != "" {
				row.LeaseMS = p.UntilMS - now.UnixMilli()
			}
			s.rep.Binlogs = append(s.rep.Binlogs, row)
			s.count(wire.LayoutBinlogPosition)
		},
	}
}

func (s *scanner) readers(key, base string, ttl int64) followUp {
	var n *redis.IntCmd
	return followUp{
		queue: func(p redis.Pipeliner) { n = p.ZCard(context.Background(), key) },
		done: func() {
			c, err := n.Result()
			if err != nil || c == 0 {
				return
			}
			s.rep.Locks = append(s.rep.Locks, Lock{Key: base, Kind: wire.LockReaders, Holds: c, TTLms: ttl})
		},
	}
}
