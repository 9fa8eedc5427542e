package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// printReport writes the human-readable report.
func printReport(out io.Writer, r *Report) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "scanned %d keys on %s", r.Scanned, strings.Join(r.Nodes, ", "))
	if r.Truncated {
		fmt.Fprint(w, " (stopped at -max-keys on some node: figures cover part of the keyspace)")
	}
	fmt.Fprintln(w)
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "  ! %s\n", s)
		}
	}

	src := "MEMORY USAGE"
	if !r.MemoryUsage {
		src = "STRLEN; other types not sized"
	}
	fmt.Fprintf(w, "\nkey sizes (%s)\n", src)
	for _, b := range r.Sizes {
		if b.Count > 0 {
			fmt.Fprintf(w, "  %s\t%d keys\t%s\n", b.Label, b.Count, humanBytes(b.Bytes))
		}
	}
	if len(r.Biggest) > 0 {
		fmt.Fprintln(w, "\nbiggest keys")
		for _, b := range r.Biggest {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", humanBytes(b.Bytes), b.Type, quote(b.Key), b.Node)
		}
	}

	e := r.Entries
	fmt.Fprintf(w, "\ncache entries: %d (absences %d, compressed %d, stale %d, refreshing %d, tagged %d, no expiry %d); version tombstones %d; hot-key copies %d\n",
		e.Count, e.Null, e.Compressed, e.Stale, e.Refreshing, e.Tagged, e.NoTTL, e.Tombstones, e.Copies)
	if len(r.Tags) > 0 {
		fmt.Fprintf(w, "tag invalidations kept: %d\n", len(r.Tags))
		for _, t := range r.Tags {
			fmt.Fprintf(w, "  %s\t%s\tinvalidated %s\n", quote(t.Prefix), quote(t.Tag), t.Invalidated.Format(time.RFC3339Nano))
		}
	}
	if e.Count > 0 {
		fmt.Fprintln(w, "  TTL")
		for _, b := range e.TTLs {
			if b.Count > 0 {
				fmt.Fprintf(w, "  %s\t%d\n", b.Label, b.Count)
			}
		}
		if e.BusiestSecondKeys > 0 {
			fmt.Fprintf(w, "  busiest second: %d entries expire from %s\n", e.BusiestSecondKeys, e.BusiestSecond.Format(time.RFC3339))
		}
	}

	fmt.Fprintf(w, "\nlease placeholders: %d in flight, %d stranded\n", r.Leases.InFlight, len(r.Leases.Stranded))
	for _, s := range r.Leases.Stranded {
		ttl := "no expiry"
		if s.TTLms >= 0 {
			ttl = (time.Duration(s.TTLms) * time.Millisecond).String()
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", quote(s.Key), s.Shape, ttl, s.Node)
	}

	if len(r.Queues) > 0 || len(r.DeadLetters) > 0 {
		fmt.Fprintln(w, "\nwrite-path retry queues")
		for _, q := range r.Queues {
			fmt.Fprintf(w, "  %s %s\t%d pending\t%d due\n", queueTag(q.Prefix, q.Shard), q.Target, q.Depth, q.Due)
		}
		for _, d := range r.DeadLetters {
			fmt.Fprintf(w, "  %s\t%d dead letters kept\t%d ever\n", queueTag(d.Prefix, d.Shard), d.Kept, d.Total)
		}
	}
	if len(r.Blooms) > 0 {
		fmt.Fprintln(w, "\nBloom filters")
		for _, b := range r.Blooms {
			fmt.Fprintf(w, "  %s\tm=%d k=%d\tready=%v\t%.1f%% of bits set\n", b.Name, b.M, b.K, b.Ready, 100*b.FillRatio)
		}
	}
	if len(r.Locks) > 0 {
		fmt.Fprintln(w, "\nlocks held")
		for _, l := range r.Locks {
			ttl := "no expiry"
			if l.TTLms >= 0 {
				ttl = (time.Duration(l.TTLms) * time.Millisecond).String()
			}
			fmt.Fprintf(w, "  %s\t%s\towner=%s holds=%d token=%s\t%s\n", quote(l.Key), l.Kind, quote(l.Owner), l.Holds, l.Token, ttl)
		}
	}
	if len(r.Binlogs) > 0 {
		fmt.Fprintln(w, "\nbinlog sources (position, tailer)")
		for _, b := range r.Binlogs {
			pos := "no position saved"
			if b.File != "" {
				pos = fmt.Sprintf("%s:%d", b.File, b.Offset)
			}
			role := "no tailer: the next instance to start takes the lease"
			switch {
			case b.Tailer != "" && b.LeaseMS > 0:
				role = fmt.Sprintf("tailer %s, lease %v left", b.Tailer, time.Duration(b.LeaseMS)*time.Millisecond)
			case b.Tailer != "":
				role = fmt.Sprintf("tailer %s, lease ran out %v ago: a standby takes over", b.Tailer, -time.Duration(b.LeaseMS)*time.Millisecond)
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\n", quote(b.Key), pos, role)
		}
	}
	if len(r.Keys) > 0 {
		fmt.Fprintln(w, "\ncacheguard keys by layout")
		for _, name := range slices.Sorted(maps.Keys(r.Keys)) {
			fmt.Fprintf(w, "  %s\t%d\n", name, r.Keys[name])
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nunreadable replies (skipped)")
		for _, s := range r.Errors {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

// quote shows a key safely: binary bytes escaped, very long keys cut.
func quote(s string) string {
	const max = 120
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}
