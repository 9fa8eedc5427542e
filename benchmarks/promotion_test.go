package benchmarks

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/hotkey"
)

// BenchmarkHotKeyPromotion replays the zipfian trace through a hot-key
// detector on a simulated clock, at promotionRate reads per second, with the
// local tier modelled as cacheguard runs it: every read is recorded; a read
// is served from memory while its key's local entry is fresh (promotionTTL
// after the Redis read that admitted it); any other read goes to Redis, and
// its value is admitted if the detector says the key is hot. No Redis, no
// goroutines: the figures are the detector's alone, and repeatable.
//
// Reported: redis-reads/op, the share of reads that go to Redis (the round
// trips per read of the zipfian benchmark's hot-key row, before its
// concurrency and its real clock); before-promotion-%, the share of all reads
// that went to Redis for a key the detector promoted later (reads a faster
// detector would have saved); promotion-ms-p50 and -p90, the time from the
// first read to the promotion of the 100 most read keys;
// top-reads-before-promotion, the median number of reads one of those keys
// sent to Redis before its promotion; hot-keys, how many keys were hot at the
// end. An op is one replay of the trace (1 048 576 reads, 10.5 s of simulated
// time); the reads of its first second warm up and are not counted, except in
// the figures about the 100 most read keys, which are all about the start.
//
// The admit-all row is the reference: every key admitted on its first read.
func BenchmarkHotKeyPromotion(b *testing.B) {
	type variant struct {
		name string
		opts []hotkey.Option // nil: admit every key
	}
	variants := []variant{
		{"admit-all", nil},
		{fmt.Sprintf("k=%d/min=%d/window=1s", hotK, hotMinCount), []hotkey.Option{
			hotkey.WithK(hotK), hotkey.WithMinCount(hotMinCount)}},
		{fmt.Sprintf("k=%d/min=%d/window=1s", promoK, promoMinCount), []hotkey.Option{
			hotkey.WithK(promoK), hotkey.WithMinCount(promoMinCount)}},
		{fmt.Sprintf("k=%d/min=%d/window=%v", promoK, promoMinCount, promoWindow), []hotkey.Option{
			hotkey.WithK(promoK), hotkey.WithMinCount(promoMinCount),
			hotkey.WithWindow(promoWindow), hotkey.WithTick(promoWindow / 10)}},
		{fmt.Sprintf("k=%d/min=1/window=1s", promoK), []hotkey.Option{
			hotkey.WithK(promoK), hotkey.WithMinCount(1)}},
	}
	trace := zipfTrace() // whole even in a quick run: it takes well under a second
	names := keyNames()
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var res promotionResult
			for b.Loop() {
				res = replayPromotion(b, trace, names, v.opts)
			}
			n := float64(len(trace)) - float64(promotionWarm/(time.Second/promotionRate))
			b.ReportMetric(float64(res.redisReads)/n, "redis-reads/op")
			b.ReportMetric(100*float64(res.beforePromotion)/n, "before-promotion-%")
			b.ReportMetric(res.p50.Seconds()*1000, "promotion-ms-p50")
			b.ReportMetric(res.p90.Seconds()*1000, "promotion-ms-p90")
			b.ReportMetric(float64(res.hot), "hot-keys")
			b.ReportMetric(res.topBefore, "top-reads-before-promotion")
		})
	}
}

// The detector settings this module's hot-key row uses (lib_cacheguard_test.go)
// are hotK and hotMinCount; these are the ones compared with them.
const (
	promoK        = 10_000
	promoMinCount = 2
	promoWindow   = 500 * time.Millisecond
	promotionRate = 100_000 // reads per second, about what 8 goroutines reach here
	promotionTTL  = zipfLocalTTL
	// Reads in the first second are replayed but not counted, as the
	// zipfian benchmark warms up before measuring.
	promotionWarm = time.Second
	// Times to promotion are those of the promotionTop most read keys,
	// all of them read from the start: the keys the tier is for.
	promotionTop = 100
)

type promotionResult struct {
	redisReads, beforePromotion int
	p50, p90                    time.Duration
	hot                         int
	topBefore                   float64
}

func replayPromotion(b *testing.B, trace []int32, names []string, opts []hotkey.Option) promotionResult {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	var det *hotkey.Detector
	if opts != nil {
		var err error
		det, err = hotkey.New(append([]hotkey.Option{hotkey.WithClock(clock)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		defer det.Close()
	}
	step := time.Second / promotionRate
	tick, nextTick := detectorTick(opts), now
	first := make(map[int32]time.Time)        // first read of each key
	promoted := make(map[int32]time.Duration) // time from first read to promotion
	fresh := make(map[int32]time.Time)        // local entry fresh until
	missed := make(map[int32]int)             // Redis reads while not hot, after the warm-up
	early := make(map[int32]float64)          // the same for the hottest keys, from the start
	var res promotionResult
	counted := now.Add(promotionWarm)
	for _, id := range trace {
		now = now.Add(step)
		if det != nil && !now.Before(nextTick) {
			det.Tick() // as the detector's goroutine would
			nextTick = nextTick.Add(tick)
		}
		key := names[id]
		if _, ok := first[id]; !ok {
			first[id] = now
		}
		det.Record(key)
		if now.Before(fresh[id]) {
			continue // local hit
		}
		if now.After(counted) {
			res.redisReads++
		}
		if det == nil || det.IsHot(key) {
			fresh[id] = now.Add(promotionTTL)
			if _, ok := promoted[id]; !ok {
				promoted[id] = now.Sub(first[id])
			}
			continue
		}
		if _, ok := promoted[id]; !ok {
			if now.After(counted) {
				missed[id]++
			}
			if id < promotionTop {
				early[id]++
			}
		}
	}
	var waits []time.Duration
	for id, d := range promoted {
		if id < promotionTop { // the trace numbers ids by frequency
			waits = append(waits, d)
		}
		res.beforePromotion += missed[id]
	}
	slices.Sort(waits)
	if len(waits) > 0 {
		res.p50, res.p90 = waits[len(waits)/2], waits[len(waits)*9/10]
	}
	var before []float64
	for id := range int32(promotionTop) {
		before = append(before, early[id])
	}
	res.topBefore = median(before)
	if det != nil {
		res.hot = len(det.Top(0))
	}
	return res
}

// detectorTick is the tick the options set (the detector's default unless
// WithTick is among them; only the variants above use it).
func detectorTick(opts []hotkey.Option) time.Duration {
	if len(opts) > 2 {
		return promoWindow / 10
	}
	return 100 * time.Millisecond
}
