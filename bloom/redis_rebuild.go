package bloom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"iter"
	"math/bits"
	"time"

	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/redis/go-redis/v9"
)

// A Redis rebuild fills a bitmap in this process's memory (a Local filter's
// bits, so the placement is the same), uploads it into {N}:next in chunks
// while {N}:bits keeps serving, then in one script ORs in {N}:delta (the
// keys added meanwhile) and RENAMEs next over bits: readers see the old
// filter or the new one, never a half-built one.
//
// The rebuild holds a lease ({N}:build: a random token with an expiry that
// the rebuild keeps renewing) so that two instances cannot fill the same
// next, and so that a rebuilder that dies leaves the filter rebuildable once
// the lease runs out. While the lease exists every Add also sets its bits in
// delta. If the lease is lost, some Adds may have skipped delta, so every
// later step of the rebuild, and the swap above all, is refused
// (ErrRebuildLost) rather than drop them.

// claimScript starts a rebuild: it creates the filter if missing, refuses if
// another rebuild holds the lease, and starts next and delta afresh.
//
// KEYS: cfg, bits, next, delta, build. ARGV: params, m, k, token, lease ms.
var claimScript = redis.NewScript(checkLua + createLua + `
if redis.call('EXISTS', KEYS[5]) == 1 then
  return redis.error_reply('BLOOMBUSY another rebuild holds the lease')
end
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('SETBIT', KEYS[3], tonumber(ARGV[2]) - 1, 0)
redis.call('SET', KEYS[5], ARGV[4], 'PX', ARGV[5])
return 1
`)

// leaseLua refuses to go on unless the lease (KEYS[lease]) still holds our
// token (ARGV[1]), and renews it for ARGV[2] ms.
const leaseLua = `
if redis.call('GET', KEYS[lease]) ~= ARGV[1] then
  return redis.error_reply('BLOOMLOST lease expired or taken over')
end
redis.call('PEXPIRE', KEYS[lease], ARGV[2])
`

// renewScript renews the lease while the source is being read.
//
// KEYS: build. ARGV: token, lease ms.
var renewScript = redis.NewScript(`local lease = 1` + leaseLua + `return 1`)

// uploadScript writes one chunk of the new bitmap into next.
//
// KEYS: next, build. ARGV: token, lease ms, byte offset, bytes.
var uploadScript = redis.NewScript(`local lease = 2` + leaseLua + `
redis.call('SETRANGE', KEYS[1], ARGV[3], ARGV[4])
return 1
`)

// swapScript merges delta into next, moves next over bits and marks the
// filter ready, if the lease is still ours.
//
// KEYS: cfg, bits, next, delta, build. ARGV: params, m, k, token.
var swapScript = redis.NewScript(checkLua + `
if redis.call('GET', KEYS[5]) ~= ARGV[4] or redis.call('EXISTS', KEYS[3]) == 0 then
  return redis.error_reply('BLOOMLOST lease expired or taken over')
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('BITOP', 'OR', KEYS[3], KEYS[3], KEYS[4])
end
redis.call('RENAME', KEYS[3], KEYS[2])
redis.call('DEL', KEYS[4], KEYS[5])
redis.call('SET', KEYS[1], ARGV[1] .. READY)
return 1
`)

// abortScript drops next, delta and the lease after a failed rebuild, unless
// another rebuild has taken the lease since.
//
// KEYS: next, delta, build. ARGV: token.
var abortScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
`)

// uploadChunk is how many bitmap bytes one upload call carries.
const uploadChunk = 256 << 10

// abortTimeout bounds the clean-up after a failed rebuild, which runs even if
// the rebuild's context was cancelled.
const abortTimeout = 5 * time.Second

// Rebuild fills a fresh bitmap with every key of src while the current one
// keeps serving every instance, then swaps it in atomically and marks the
// filter ready for all of them. Keys passed to Add (through any instance)
// from the moment Rebuild is called are kept too, so src may be a scan that
// started after the call. The new bitmap is built in this process's memory
// (m/8 bytes) and uploaded in chunks, so the source is read at local speed.
//
// Only one rebuild of a filter runs at a time: another one returns
// ErrRebuildInProgress. The lease is renewed while src is read; if src stalls
// longer than WithBuildLease the lease can expire and Rebuild returns
// ErrRebuildLost. On any error the serving filter is left as it was.
func (r *Redis) Rebuild(ctx context.Context, src iter.Seq2[string, error]) (err error) {
	token, err := newToken()
	if err != nil {
		return err
	}
	k := r.k
	lease := r.cfg.lease
	leaseMS := max(lease.Milliseconds(), 1)
	if err := claimScript.Run(ctx, r.rdb, []string{k.Cfg, k.Bits, k.Next, k.Delta, k.Build}, r.args(token, leaseMS)...).Err(); err != nil {
		return r.wrap(err)
	}
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if aerr := abortScript.Run(actx, r.rdb, []string{k.Next, k.Delta, k.Build}, token).Err(); aerr != nil {
			err = errors.Join(err, r.wrap(aerr))
		}
	}()

	f := bbloom.New(uint(r.p.M), r.p.K)
	renewed := r.cfg.now()
	_, err = feed(ctx, src, &r.cfg, r.n, func(keys []string) error {
		for _, key := range keys {
			f.AddString(key)
		}
		// Renew a third of the way through the lease, so one slow batch
		// does not lose it.
		if now := r.cfg.now(); now.Sub(renewed) >= lease/3 {
			if err := renewScript.Run(ctx, r.rdb, []string{k.Build}, token, leaseMS).Err(); err != nil {
				return r.wrap(err)
			}
			renewed = now
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.upload(ctx, f, token, leaseMS); err != nil {
		return err
	}
	if err := swapScript.Run(ctx, r.rdb, []string{k.Cfg, k.Bits, k.Next, k.Delta, k.Build}, r.args(token)...).Err(); err != nil {
		return r.wrap(err)
	}
	r.ready.Store(true)
	return nil
}

// upload copies f's bits into next, skipping all-zero chunks (next starts
// zeroed). Every call checks and renews the lease.
func (r *Redis) upload(ctx context.Context, f *bbloom.BloomFilter, token string, leaseMS int64) error {
	words := f.BitSet().Words()
	size := int((r.p.M + 7) / 8)
	chunk := make([]byte, 0, uploadChunk)
	for start := 0; start < size; start += uploadChunk {
		chunk = redisBytes(chunk[:0], words, start, min(start+uploadChunk, size))
		if allZero(chunk) {
			continue
		}
		if err := uploadScript.Run(ctx, r.rdb, []string{r.k.Next, r.k.Build}, token, leaseMS, start, chunk).Err(); err != nil {
			return r.wrap(err)
		}
	}
	// A last renewal-and-check even if every chunk was zero.
	if err := renewScript.Run(ctx, r.rdb, []string{r.k.Build}, token, leaseMS).Err(); err != nil {
		return r.wrap(err)
	}
	return nil
}

// redisBytes appends bytes [from, to) of the bitmap held in words (bit i at
// bit i%64 of words[i/64]) in Redis' layout (bit i at bit 7-i%8 of byte i/8).
func redisBytes(dst []byte, words []uint64, from, to int) []byte {
	for j := from; j < to; j++ {
		var b byte
		if w := j / 8; w < len(words) {
			b = byte(words[w] >> (8 * (j % 8)))
		}
		dst = append(dst, bits.Reverse8(b))
	}
	return dst
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
