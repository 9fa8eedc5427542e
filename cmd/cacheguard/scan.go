package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// scanner walks one node after another and fills a Report. It is used by one
// goroutine.
type scanner struct {
	opts     inspectOptions
	rep      *Report
	sizes    *histogram
	ttls     *histogram
	biggest  *topKeys
	expiries []int64 // absolute expiry (ms) of cache entries, for the busiest second
	progress io.Writer
	lastLine time.Time
	shown    bool
	node     int
	nodes    int
	useMem   bool
}

func newScanner(opts inspectOptions, progress io.Writer) *scanner {
	return &scanner{
		opts:     opts,
		rep:      &Report{MemoryUsage: true},
		sizes:    newHistogram(sizeBounds, sizeLabel),
		ttls:     newHistogram(ttlBounds, ttlLabel),
		biggest:  newTopKeys(opts.top),
		progress: progress,
		lastLine: time.Now(),
		useMem:   true,
	}
}

// scanNode walks one node's keyspace with SCAN, at most opts.maxKeys keys.
func (s *scanner) scanNode(ctx context.Context, c *redis.Client) error {
	addr := c.Options().Addr
	s.rep.Nodes = append(s.rep.Nodes, addr)
	s.node++
	now, err := c.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: TIME: %w", addr, err)
	}
	if s.rep.Time.IsZero() {
		s.rep.Time = now
	}
	var cursor uint64
	var seen int64
	for {
		var keys []string
		keys, cursor, err = c.Scan(ctx, cursor, "", s.opts.count).Result()
		if err != nil {
			return fmt.Errorf("%s: SCAN: %w", addr, err)
		}
		if room := s.opts.maxKeys - seen; int64(len(keys)) > room {
			keys = keys[:room]
			s.rep.Truncated = true
		}
		if err := s.examine(ctx, c, addr, keys, now); err != nil {
			return err
		}
		seen += int64(len(keys))
		s.rep.Scanned += int64(len(keys))
		s.showProgress(false)
		if cursor == 0 {
			return nil
		}
		if seen >= s.opts.maxKeys {
			s.rep.Truncated = true // more keys may follow the cursor
			return nil
		}
	}
}

// examine reads one SCAN batch in two pipelined round trips: the type, TTL
// and size of every key, then what each kind of key needs.
func (s *scanner) examine(ctx context.Context, c *redis.Client, addr string, keys []string, now time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	types := make([]*redis.StatusCmd, len(keys))
	pttls := make([]*redis.DurationCmd, len(keys))
	mems := make([]*redis.IntCmd, len(keys))
	strlens := make([]*redis.IntCmd, len(keys))
	heads := make([]*redis.StringCmd, len(keys))
	_, err := pipe.Run(ctx, c.Pipeline(), func(p redis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
			pttls[i] = p.PTTL(ctx, k)
			if s.useMem {
				mems[i] = p.MemoryUsage(ctx, k, 0)
			}
			strlens[i] = p.StrLen(ctx, k)
			heads[i] = p.GetRange(ctx, k, 0, wire.HeaderSize-1)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && isConnError(err) {
		return fmt.Errorf("%s: %w", addr, err)
	}
	var follow []func(redis.Pipeliner)
	var after []func()
	for i, k := range keys {
		typ, err := types[i].Result()
		if err != nil {
			if !errors.Is(err, redis.Nil) {
				s.errorf("%s: TYPE %q: %v", addr, k, err)
			}
			continue
		}
		if typ == "none" { // expired or deleted since SCAN
			continue
		}
		ttl := pttlMillis(pttls[i])
		var size int64
		if s.useMem {
			n, err := mems[i].Result()
			switch {
			case err == nil:
				size = n
			case isUnknownCommand(err):
				s.useMem = false
				s.rep.MemoryUsage = false
			}
		}
		var strlen int64
		var head []byte
		if typ == "string" {
			// A reply that failed leaves no value (a marked one: internal/pipe).
			if n, err := strlens[i].Result(); err == nil {
				strlen = n
			}
			if h, err := heads[i].Result(); err == nil {
				head = []byte(h)
			}
			if size == 0 {
				size = strlen
			}
		}
		s.sizes.add(size, size)
		s.biggest.add(BigKey{Key: k, Type: typ, Bytes: size, Node: addr})

		if f, ok := s.recognise(ctx, k, typ, head, strlen, ttl, addr, now); ok {
			follow = append(follow, f.queue)
			after = append(after, f.done)
		}
	}
	if len(follow) == 0 {
		return nil
	}
	_, err = pipe.Run(ctx, c.Pipeline(), func(p redis.Pipeliner) error {
		for _, f := range follow {
			f(p)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	for _, f := range after {
		f()
	}
	return nil
}

// finish computes what needs every node's keys.
func (s *scanner) finish() *Report {
	s.showProgress(true)
	r := s.rep
	r.Sizes = s.sizes.buckets()
	r.Biggest = s.biggest.sorted()
	r.Entries.TTLs = s.ttls.buckets()
	at, n := busiestSecond(s.expiries)
	if n > 0 {
		r.Entries.BusiestSecond = time.UnixMilli(at).UTC()
		r.Entries.BusiestSecondKeys = n
	}
	if n >= s.opts.burst {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"avalanche risk: %d cache entries expire within one second starting %s; spread their TTLs (cache.WithJitter)",
			n, r.Entries.BusiestSecond.Format(time.RFC3339)))
	}
	if len(r.Leases.Stranded) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"%d stranded lease placeholder(s): readers of those keys wait for a fill that may never come; delete them",
			len(r.Leases.Stranded)))
	}
	for _, b := range r.Biggest {
		if b.Bytes >= s.opts.bigKey {
			r.Warnings = append(r.Warnings, fmt.Sprintf("big key %q: %s", b.Key, humanBytes(b.Bytes)))
		}
	}
	for _, b := range r.Blooms {
		if b.FillRatio > 0.5 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"Bloom filter %q is %.0f%% full: past one half its false-positive rate exceeds the design; rebuild it larger",
				b.Name, 100*b.FillRatio))
		}
	}
	for _, d := range r.DeadLetters {
		if d.Kept > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d dead letter(s) in %q: deletes that never succeeded", d.Kept, d.Prefix))
		}
	}
	sort.Slice(r.Queues, func(i, j int) bool { return r.Queues[i].Depth > r.Queues[j].Depth })
	return r
}

// busiestSecond returns the start of the one-second window holding the most
// expiries, and how many.
func busiestSecond(ms []int64) (int64, int64) {
	sort.Slice(ms, func(i, j int) bool { return ms[i] < ms[j] })
	var best, at int64
	lo := 0
	for hi := range ms {
		for ms[hi]-ms[lo] >= 1000 {
			lo++
		}
		if n := int64(hi - lo + 1); n > best {
			best, at = n, ms[lo]
		}
	}
	return at, best
}

func (s *scanner) errorf(format string, args ...any) {
	const maxErrors = 20
	if len(s.rep.Errors) < maxErrors {
		s.rep.Errors = append(s.rep.Errors, fmt.Sprintf(format, args...))
	}
}

// showProgress rewrites one status line at most once a second.
func (s *scanner) showProgress(final bool) {
	if s.progress == nil {
		return
	}
	if !final && time.Since(s.lastLine) < time.Second {
		return
	}
	if final && !s.shown {
		return // a short scan: no line to finish
	}
	s.lastLine, s.shown = time.Now(), true
	fmt.Fprintf(s.progress, "\rscanned %d keys (node %d of %d)", s.rep.Scanned, s.node, s.nodes)
	if final {
		fmt.Fprintln(s.progress)
	}
}

// isDeadLetter reports whether v is a dead letter as consistency writes them
// (consistency.DeadLetter in JSON): an object naming a target and its keys.
func isDeadLetter(v string) bool {
	var d consistency.DeadLetter
	return json.Unmarshal([]byte(v), &d) == nil && d.Target != "" && len(d.Keys) > 0
}

func pttlMillis(c *redis.DurationCmd) int64 {
	d, err := c.Result()
	if err != nil || d < 0 {
		return -1 // no expiry (-1) or gone (-2): treated alike
	}
	return d.Milliseconds()
}

func isUnknownCommand(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}

func isConnError(err error) bool {
	var rerr redis.Error
	return !errors.As(err, &rerr) && !errors.Is(err, redis.Nil)
}
