package lincheck

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cacheguard/cacheguard/cache"
)

// never is the return time of a write whose cache call never succeeded: it
// may take effect at any later point.
const never = math.MaxInt64 / 2

// impossible is the version recorded for a read that returned something no
// row ever held (absence of a row that exists, another key's row).
const impossible = -1

// op is one operation on one key (a GetMany is one read per key it asked).
type op struct {
	key    string
	worker int    // the goroutine that ran it (porcupine's client id)
	inst   int    // the Cache instance it ran on
	kind   string // Get, GetMany or the write's cache call
	write  bool
	ver    int64 // written, or returned (0 for the initial row or its absence)
	call   int64 // nanoseconds since the history began
	ret    int64
}

func (o op) String() string {
	end := "never"
	if o.ret != never {
		end = fmt.Sprintf("%9.3fms", ms(o.ret))
	}
	what := fmt.Sprintf("-> v%d", o.ver)
	if o.write {
		what = fmt.Sprintf("<- v%d", o.ver)
	} else if o.ver == impossible {
		what = "-> impossible value"
	}
	return fmt.Sprintf("%9.3fms .. %s  inst%d w%-2d %-20s %s", ms(o.call), end, o.inst, o.worker, o.kind, what)
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// history records operations as they complete.
type history struct {
	start time.Time

	mu      sync.Mutex
	ops     []op
	dropped int // reads that returned an error (no constraint)
	gaveUp  int // writes whose cache call never succeeded
	kills   int // connections killed on the servers

	stats cache.Stats // summed over the instances, for the summary
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(o ...op) {
	h.mu.Lock()
	h.ops = append(h.ops, o...)
	h.mu.Unlock()
}

func (h *history) count(n *int) {
	h.mu.Lock()
	*n++
	h.mu.Unlock()
}

// byKey returns each key's operations, in call order.
func (h *history) byKey() map[string][]op {
	out := make(map[string][]op)
	for _, o := range h.ops {
		out[o.key] = append(out[o.key], o)
	}
	for _, ops := range out {
		sort.Slice(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
	}
	return out
}

// register is the sequential specification of one key: a write sets the
// version, a read returns the current one.
var register = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		idx := make(map[string]int)
		var out [][]porcupine.Operation
		for _, o := range ops {
			k := o.Input.(op).key
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], o)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		o := input.(op)
		if o.write {
			return true, o.ver
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		o := input.(op)
		if o.write {
			return fmt.Sprintf("%s %s v%d (inst%d)", o.key, o.kind, o.ver, o.inst)
		}
		return fmt.Sprintf("%s %s -> v%d (inst%d)", o.key, o.kind, output.(int64), o.inst)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("v%d", state.(int64)) },
}

func porcupineOps(ops []op) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		out[i] = porcupine.Operation{ClientId: o.worker, Input: o, Call: o.call, Output: o.ver, Return: o.ret}
	}
	return out
}

// stale is a read that started more than a bound after a write of a newer
// version returned.
type stale struct {
	read  op
	write op    // the earliest-returning write newer than what read returned
	lag   int64 // from write's return to read's call
}

// staleReads returns the reads of ops (one key's) that started more than
// bound after a newer write returned, the most stale first.
func staleReads(ops []op, bound time.Duration) []stale {
	var out []stale
	for _, r := range ops {
		if r.write {
			continue
		}
		var first *op
		for i := range ops {
			w := &ops[i]
			if w.write && w.ver > r.ver && w.ret != never && (first == nil || w.ret < first.ret) {
				first = w
			}
		}
		if first != nil && r.call-first.ret > int64(bound) {
			out = append(out, stale{read: r, write: *first, lag: r.call - first.ret})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lag > out[j].lag })
	return out
}

// summary describes a history's size and faults in one line.
func (h *history) summary() string {
	reads, writes, last := 0, 0, int64(0)
	for _, o := range h.ops {
		if o.write {
			writes++
		} else {
			reads++
		}
		if o.ret != never {
			last = max(last, o.ret)
		}
	}
	s := h.stats
	return fmt.Sprintf("%d reads, %d writes over %v; %d reads failed (no constraint), %d writes never reached Redis, %d connections killed; "+
		"cache: %d hits (%d local, %d from copies), %d loads, %d fills refused, %d lease waits, %d Redis errors, %d subscription downs",
		reads, writes, time.Duration(last).Round(time.Millisecond), h.dropped, h.gaveUp, h.kills,
		s.Hits, s.LocalHits, s.CopyReads, s.Loads, s.RejectedFills, s.LeaseWaits, s.RedisErrors, s.SubscriptionDowns)
}

// staleFigures sums up stale reads in one line.
func staleFigures(all []stale) string {
	if len(all) == 0 {
		return "no stale read"
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lag > all[j].lag })
	return fmt.Sprintf("%d stale reads, lag from the newer write's return to the read's start: max %.1fms, median %.1fms",
		len(all), ms(all[0].lag), ms(all[len(all)/2].lag))
}

// describeStale reports the stale reads found, with the worst ones in full.
func describeStale(all []stale) string {
	if len(all) == 0 {
		return "no read started after a newer write had returned"
	}
	var b strings.Builder
	b.WriteString(staleFigures(all))
	for i, s := range all {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "\n  key %s: %s\n         after %s", s.read.key, s.read, s.write)
	}
	return b.String()
}

// listAround writes the operations of one key that overlap [from, to],
// marking the reads that started after a newer write had returned.
func listAround(b *strings.Builder, ops []op, from, to int64) {
	lag := make(map[op]int64)
	for _, s := range staleReads(ops, 0) {
		lag[s.read] = s.lag
	}
	n := 0
	for _, o := range ops {
		if o.ret < from || o.call > to {
			continue
		}
		if n++; n > 200 {
			fmt.Fprintf(b, "  ... (more)\n")
			return
		}
		fmt.Fprintf(b, "  %s", o)
		if l, ok := lag[o]; ok {
			fmt.Fprintf(b, "   STALE: started %.1fms after a newer write returned", ms(l))
		}
		b.WriteByte('\n')
	}
}
