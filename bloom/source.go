package bloom

import (
	"context"
	"iter"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Progress reports how far a Rebuild has read its source.
type Progress struct {
	// Keys is the number of keys read from the source so far.
	Keys int64
	// Expected is the number of keys the filter was sized for; Keys well
	// above it means the false-positive rate is above the configured one
	// and the filter should be resized.
	Expected uint
	// Elapsed is the time since the rebuild started.
	Elapsed time.Duration
	// Done is set on the last report, whether the rebuild succeeded or not.
	Done bool
}

// feed reads every key of src and hands them to add in batches, reporting
// progress. It stops at the first error from src, add or ctx.
func feed(ctx context.Context, src iter.Seq2[string, error], c *config, expected uint, add func([]string) error) (n int64, err error) {
	start := c.now()
	report := func(done bool) {
		if c.progress != nil {
			c.progress(Progress{Keys: n, Expected: expected, Elapsed: c.now().Sub(start), Done: done})
		}
	}
	defer func() { report(true) }()

	batch := make([]string, 0, c.batch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := add(batch)
		batch = batch[:0]
		return err
	}
	for key, serr := range src {
		if serr != nil {
			return n, kind.Errorf("cacheguard: bloom: reading source after %d keys: %w", n, serr)
		}
		batch = append(batch, key)
		n++
		if len(batch) == c.batch {
			if err := flush(); err != nil {
				return n, err
			}
		}
		if c.progress != nil && n%c.every == 0 {
			report(false)
		}
	}
	return n, flush()
}
