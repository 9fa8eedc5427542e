package stock

import (
	"context"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// lifecycle lets Close stop a consumer between two batches: passes enter
// and leave it; Close marks it closed (no pass starts, a pass in flight
// reads nothing more), waits for the pass in flight and, if the caller's
// context ends first, cancels it.
type lifecycle struct {
	mu      sync.Mutex
	closed  bool
	passes  sync.WaitGroup
	stop    chan struct{}      // closed by Close
	abort   context.Context    // ended when Close stops waiting
	aborted context.CancelFunc // ends abort
}

func (l *lifecycle) init() {
	l.stop = make(chan struct{})
	l.abort, l.aborted = context.WithCancel(context.Background())
}

// enter registers a pass; ErrClosed after Close.
func (l *lifecycle) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.passes.Add(1)
	return nil
}

// stopping reports that Close was called: read nothing more.
func (l *lifecycle) stopping() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// Close stops the consumer: no new pass starts, and the pass in flight
// reads nothing more, applies and acknowledges the entries it holds, and
// ends; Close returns then, with nil. If ctx ends first, the pass in flight
// is cancelled: the entries it read and had not applied stay pending in the
// group (a consumer started under the same name takes them back at once,
// any other after ClaimIdle), and Close returns ctx's error once the pass
// has ended. Close gives the consumer's name back (see WithConsumerName),
// within ctx, or within 250 ms past its deadline when the pass had to be
// cancelled. Redis calls the pass gave up on (a frozen server, a client
// that ignores deadlines) end within the client's own timeouts; Close waits
// for them until ctx ends. After Close, Run and Pass return ErrClosed, and so does a
// second Close.
func (c *Consumer) Close(ctx context.Context) error {
	l := &c.life
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	close(l.stop)
	l.mu.Unlock()
	defer l.aborted()
	done := make(chan struct{})
	go func() { l.passes.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.aborted()
		<-done
		// The batch is handed back to whoever takes the name next: give
		// it back too, for a moment past the deadline.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nameGiveBack)
		c.releaseName(gctx)
		cancel()
		return kind.Errorf("cacheguard: stock: consumer close: batch in flight handed back: %w", context.Cause(ctx))
	}
	c.releaseName(ctx)
	// Calls a pass gave up on (its context ended while the client waited
	// for a reply) end within the client's own timeouts.
	wait := c.cfg.timeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !c.flight.Wait(max(wait, 0)) {
		return kind.Errorf("cacheguard: stock: consumer close: Redis calls still running: %w", context.DeadlineExceeded)
	}
	return nil
}

// passContext is ctx, also ended when Close stops waiting for the pass.
func (c *Consumer) passContext(ctx context.Context) (context.Context, func()) {
	pctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life.abort, func() { cancel(ErrClosed) })
	return pctx, func() { stop(); cancel(nil) }
}
