package bloom

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// How a Fleet's copy keeps up. The subscription's events come one at a
// time (internal/pubsub):
//
//   - Up: the channel is subscribed; everything published from then on
//     arrives. The copy is read again from Redis (reread): first the add
//     number, then the bitmap, whose bits only grow between rebuilds, so it
//     holds every add up to that number; the messages heard meanwhile are
//     applied after it, from the next number on.
//   - Message: the next add is applied; any other number (a gap: a message
//     lost or given up; a step back: Redis lost the numbers) or a rebuild
//     ends trust until a reread.
//   - Healthy: a PING sent at t was answered: every add published before t
//     has arrived, so the copy vouches until t + interval + timeout; a timer
//     ends trust then unless the next reply extends it.
//   - Down: trust ends until the next Up and its reread.
//
// trusted = up && synced && now < until.

type fleetHandler struct{ f *Fleet }

func (h fleetHandler) Up(_ string, since time.Time) {
	f := h.f
	f.mu.Lock()
	f.state.up, f.state.synced = true, false
	f.vouchLocked(since)
	f.refreshLocked()
	f.rereadLocked()
	f.mu.Unlock()
}

func (h fleetHandler) Healthy(_ string, sent time.Time) {
	f := h.f
	f.mu.Lock()
	f.vouchLocked(sent)
	f.refreshLocked()
	f.mu.Unlock()
}

func (h fleetHandler) Down(_ string, err error) {
	f := h.f
	f.mu.Lock()
	f.state.up, f.state.synced = false, false
	f.refreshLocked()
	f.mu.Unlock()
	f.cfg.report.Warn("cacheguard: bloom: fleet filter in safe mode until its subscription is back", err, "filter", f.r.name)
}

func (h fleetHandler) Report(err error) {
	h.f.cfg.report.Warn("cacheguard: bloom: fleet filter subscription", err, "filter", h.f.r.name)
}

func (h fleetHandler) Message(_, payload string) {
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &f.state
	if st.reading {
		st.pending = append(st.pending, payload)
		return
	}
	if !st.synced {
		return // a reread is wanted already
	}
	if !f.applyLocked(payload) {
		f.gaps.Add(1)
		st.synced = false
		f.refreshLocked()
		f.rereadLocked()
	}
}

// applyLocked applies the add message msg if it is the next one (an older
// one is passed over); it reports false for a gap, a step back or a
// rebuild, which only a reread mends.
func (f *Fleet) applyLocked(msg string) bool {
	seq, kind, offsets, ok := wire.ParseBloomAdds(msg)
	if !ok || kind == wire.BloomRebuilt || seq != f.state.expected {
		return false
	}
	f.local.setOffsets(offsets)
	f.state.expected++
	f.heard.Add(1)
	return true
}

// vouchLocked extends trust to t + interval + timeout.
func (f *Fleet) vouchLocked(t time.Time) {
	f.state.until = t.Add(f.cfg.interval + f.cfg.timeout)
	f.expiry.Reset(time.Until(f.state.until))
}

// refreshLocked sets trusted from the state.
func (f *Fleet) refreshLocked() {
	st := &f.state
	f.trusted.Store(st.up && st.synced && time.Now().Before(st.until))
}

// expire is the trust timer's function.
func (f *Fleet) expire() {
	f.mu.Lock()
	f.refreshLocked()
	f.mu.Unlock()
}

// rereadLocked starts a reread, or asks the one under way for another.
func (f *Fleet) rereadLocked() {
	if f.ctx.Err() != nil {
		return
	}
	if f.state.reading {
		f.state.again = true
		return
	}
	f.state.reading, f.state.pending = true, nil
	f.wg.Add(1)
	go f.rereadLoop()
}

// rereadLoop reads the bitmap until a read succeeds with nothing left to
// mend, backing off after failures, or Close.
func (f *Fleet) rereadLoop() {
	defer f.wg.Done()
	bo := call.Backoff{Min: 50 * time.Millisecond, Max: f.cfg.interval + f.cfg.timeout}
	for {
		seq, bm, ready, err := f.readBitmap()
		if f.ctx.Err() != nil {
			f.mu.Lock()
			f.state.reading = false
			f.mu.Unlock()
			return
		}
		if err != nil {
			f.rereadErrors.Add(1)
			f.cfg.report.Warn("cacheguard: bloom: fleet filter reread failed, in safe mode meanwhile", err, "filter", f.r.name)
			t := time.NewTimer(bo.Next())
			select {
			case <-f.ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		f.local.replace(f.r.p.fromBitmap(bm), ready)
		f.mu.Lock()
		st := &f.state
		st.expected = seq + 1
		mended := !st.again
		for _, msg := range st.pending {
			if s, _, _, ok := wire.ParseBloomAdds(msg); ok && s < st.expected {
				continue // in the bitmap read
			}
			if !f.applyLocked(msg) {
				f.gaps.Add(1)
				mended = false
				break
			}
		}
		st.pending, st.again = nil, false
		if !mended {
			f.mu.Unlock()
			continue
		}
		st.reading, st.synced = false, true
		f.refreshLocked()
		f.mu.Unlock()
		f.rereads.Add(1)
		return
	}
}

// readHeadScript replies {seq, ready, bitmap length}: the number of the
// last add, then what the bitmap holds, read in the same step.
//
// KEYS: cfg, bits, seq. ARGV: params.
var readHeadScript = redis.NewScript(checkLua + `
local seq = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
local r = 0
if ready then r = 1 end
return {seq, r, redis.call('STRLEN', KEYS[2])}
`)

// readChunk is how much of the bitmap one GETRANGE reads: a 10,000,000-key
// filter at 1 % (12 MB) is read in 12 calls.
const readChunk = 1 << 20

// readBitmap reads the add number, the ready flag and the bitmap, each call
// bounded by the health timeout.
func (f *Fleet) readBitmap() (seq uint64, bm []byte, ready bool, err error) {
	k := f.r.k
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.timeout)
	head, err := readHeadScript.Run(ctx, f.r.rdb, []string{k.Cfg, k.Bits, k.Seq}, f.r.head[0]).Int64Slice()
	cancel()
	if err != nil {
		return 0, nil, false, f.r.wrap(err)
	}
	if len(head) != 3 || head[0] < 0 || head[2] < 0 {
		return 0, nil, false, fmt.Errorf("cacheguard: bloom: %v: unexpected reply %v", f, head)
	}
	n := head[2]
	bm = make([]byte, 0, n)
	for off := int64(0); off < n; off += readChunk {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.timeout)
		part, err := f.r.rdb.GetRange(ctx, k.Bits, off, min(off+readChunk, n)-1).Bytes()
		cancel()
		if err != nil {
			return 0, nil, false, f.r.wrap(fmt.Errorf("read bitmap at byte %s: %w", strconv.FormatInt(off, 10), err))
		}
		bm = append(bm, part...)
	}
	return uint64(head[0]), bm, head[1] == 1, nil
}
