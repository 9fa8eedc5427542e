package transport

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// A queue's width is how many of its commands may be under way before the
// next one waits. A queue of writes is ReadsInFlight wide. A queue of reads
// starts so and then finds its width by measuring what it is for, how long
// its reads take, from the moment a caller asks to the moment its reply
// comes (waiting for a place included): after each window of widthWindow
// reads it steps its width by one, up to MaxReadsInFlight and down to
// ReadsInFlight, in the same direction as its last step while that made
// the reads no slower, in the other one when it did. Where the round trip
// is the cost (a network between the service and Redis, spare CPU), a
// wider queue saves the callers a round trip of waiting each, and it
// widens until a few callers all go out at once, as on a connection pool;
// where CPU is the cost (Redis and the service on loaded cores), pipelines
// save system calls on both sides, more callers share each, and it
// narrows. A queue at its best width moves one step and back: two widths
// that both fit the load.
const (
	// MaxReadsInFlight is the widest a queue of reads grows, and never
	// past half the client's pool of connections per node (widest), so
	// that writes and the user's own commands keep theirs.
	MaxReadsInFlight = 16
	// widthWindow is how many reads measure one width.
	widthWindow = 256
)

// width is a queue's width and its measurement; its queue's mu guards it.
type width struct {
	extra int           // beyond ReadsInFlight
	down  bool          // the direction of the next step
	n     int           // reads measured in this window
	sum   time.Duration // their latencies
	prev  time.Duration // the last window's mean, zero before one ended
}

// of is the width.
func (w *width) of() int { return ReadsInFlight + w.extra }

// observe adds n reads whose latencies sum to sum, and steps the width
// (no wider than widest) when they end a window.
func (w *width) observe(sum time.Duration, n, widest int) {
	w.n, w.sum = w.n+n, w.sum+sum
	if w.n < widthWindow {
		return
	}
	mean := w.sum / time.Duration(w.n)
	w.n, w.sum = 0, 0
	if w.prev != 0 && mean > w.prev {
		w.down = !w.down // the last step (or the load) made reads slower
	}
	w.prev = mean
	switch {
	case w.down && w.extra > 0:
		w.extra--
	case !w.down && w.extra < widest-ReadsInFlight:
		w.extra++
	case w.extra > widest-ReadsInFlight:
		w.extra = widest - ReadsInFlight
	}
}

// widest is the widest a queue of reads of rdb grows: MaxReadsInFlight,
// or half the client's pool per node when that is less (ReadsInFlight at
// least).
func widest(rdb redis.UniversalClient) int {
	pool := 0
	switch c := rdb.(type) {
	case *redis.Client:
		pool = c.Options().PoolSize
	case *redis.ClusterClient:
		pool = c.Options().PoolSize
	case *redis.Ring:
		pool = c.Options().PoolSize
	}
	if pool <= 0 {
		return MaxReadsInFlight
	}
	return max(ReadsInFlight, min(MaxReadsInFlight, pool/2))
}

// epoch is the origin of since.
var epoch = time.Now()

// since is the monotonic time since epoch: a read's start, and the sum of
// a batch's starts, kept as one number.
func since() time.Duration { return time.Since(epoch) }
