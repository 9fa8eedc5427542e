package binlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// errLeaseLost ends a tailing whose lease another instance took, or that
// could not be renewed before it ran out.
var errLeaseLost = errors.New("cacheguard: binlog: the tailer's lease was lost: standing by")

// runFleet is Run in a fleet: stand by until the lease is free, take it,
// tail while renewing it, and after any failure give it back (so that
// another instance may take over), report, and stand by again.
func (s *Source) runFleet(ctx context.Context, el elector) error {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ttl := s.opt.lease
	bo := call.Backoff{Min: s.opt.minBackoff, Max: s.opt.maxBackoff}
	seen := "" // the last other holder seen while standing by
	for {
		s.stats.setRole(RoleStandingBy)
		held, holder, err := el.acquire(ctx, token, ttl.Milliseconds())
		pause := call.Jitter(ttl / 3) // standing by: look again
		if err == nil && !held {
			seen = holder
		}
		if err == nil && held {
			if seen != "" {
				s.stats.takeovers.Add(1)
				s.log.Info("cacheguard: binlog: took over tailing from another instance", "lease", ttl)
				seen = ""
			}
			s.stats.setRole(RoleTailing)
			err = s.tailHeld(ctx, el, token, ttl)
			s.stats.setRole(RoleStandingBy)
			// Given back whatever ended the tailing, so that another
			// instance may take over at once.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if rerr := el.release(rctx, token); rerr != nil && ctx.Err() == nil {
				s.report(rerr)
			}
			cancel()
			pause = bo.Next()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case fatal(err):
			return err
		case err != nil:
			s.report(err)
			// Stand by for a lease at least, so that an instance that can
			// tail takes over from one that cannot (a network cut between
			// this one and the database).
			pause = max(bo.Next(), ttl)
		}
		if !sleep(ctx, pause) {
			return nil
		}
	}
}

// tailHeld tails while token holds the lease, renewing it every third of
// ttl; it ends with errLeaseLost when another instance took the lease, or
// when no renewal was confirmed within ttl of the last confirmed one (sent
// then), before the lease can have run out.
func (s *Source) tailHeld(ctx context.Context, el elector, token string, ttl time.Duration) error {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		confirmed := time.Now() // the acquire just before: sent no earlier
		tk := time.NewTicker(ttl / 3)
		defer tk.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-tk.C:
			}
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(tctx, ttl/3)
			held, _, err := el.acquire(rctx, token, ttl.Milliseconds())
			rcancel()
			switch {
			case tctx.Err() != nil:
				return
			case err == nil && held:
				confirmed = sent
			case err == nil:
				cancel(errLeaseLost)
				return
			default:
				s.report(err)
				if time.Since(confirmed) >= ttl*2/3 {
					cancel(kind.Errorf("%w (no renewal confirmed for %v): %w", errLeaseLost, time.Since(confirmed).Round(time.Millisecond), err))
					return
				}
			}
		}
	}()
	err := s.tail(tctx, func(ctx context.Context, p Position) error { return el.saveHeld(ctx, token, p) })
	cancel(nil)
	<-done
	if ctx.Err() == nil {
		if cause := context.Cause(tctx); errors.Is(cause, errLeaseLost) {
			return cause
		}
	}
	return err
}

// fatal reports an error that tailing again cannot mend.
func fatal(err error) bool {
	return errors.Is(err, ErrServerSetting) || errors.Is(err, ErrNoColumnNames) || errors.Is(err, ErrCorruptPosition)
}

// sleep waits d, reporting false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// report counts err and tells the logger and the error handler.
func (s *Source) report(err error) {
	s.stats.errors.Add(1)
	s.log.Warn("cacheguard binlog", "err", err)
	if s.opt.onError != nil {
		s.opt.onError(err)
	}
}
