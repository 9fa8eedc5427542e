package generation

import (
	"context"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/redis/go-redis/v9"
)

// Syncer syncs the generations of every cache of one go-redis client in a
// process, so that what a process costs Redis while idle does not grow with
// its caches: one sync client (one connection to the node holding the
// generation keys' slot), one goroutine, and every health interval (the
// shortest of its caches') one EVALSHA whose one MGET reads every cache's
// generation key (syncScript). It also asks the servers' version once
// (probeVersion) before the first sync, for every cache of the client.
//
// A Syncer is a Service of the client's pub/sub Hub: made by its first
// cache, stopped by the Hub's last Release (after every cache has left).
type Syncer struct {
	env      pubsub.Env
	rdb      redis.UniversalClient // the sync client (NewSyncClient)
	closeRDB func() error
	bound    call.Bound
	kick     chan struct{} // a sync wanted now (a new cache, a gap)

	mu      sync.Mutex
	members map[*Generations]struct{}
	running bool
	// probed: a version probe was answered (only the loop touches it);
	// refused: what it found, for the caches that join later.
	probed  bool
	refused error
}

// syncerOf returns the Syncer of hub, whose client is rdb.
func syncerOf(hub *pubsub.Hub, rdb redis.UniversalClient) *Syncer {
	return hub.Service("generation", func(env pubsub.Env) pubsub.Service {
		s, closeRDB := NewSyncClient(rdb)
		return &Syncer{env: env, rdb: s, closeRDB: closeRDB, bound: call.For(s).Strict(),
			kick: make(chan struct{}, 1), members: map[*Generations]struct{}{}}
	}).(*Syncer)
}

// join adds c and asks for a sync now (its first).
func (s *Syncer) join(c *Generations) {
	s.mu.Lock()
	s.members[c] = struct{}{}
	refused := s.refused
	start := !s.running
	s.running = true
	s.mu.Unlock()
	if refused != nil {
		c.ready(refused)
	}
	if start && !s.env.Go(s.loop) {
		return // the Hub is closing: nothing syncs any more
	}
	s.kickNow()
}

// leave takes c out.
func (s *Syncer) leave(c *Generations) {
	s.mu.Lock()
	delete(s.members, c)
	s.mu.Unlock()
}

// kickNow asks the loop for a sync now.
func (s *Syncer) kickNow() {
	select {
	case s.kick <- struct{}{}:
	default: // one is asked for already
	}
}

// Stop closes the sync client: a sync waiting on a frozen node ends now.
func (s *Syncer) Stop() { _ = s.closeRDB() }

// firstRetry is the first pause before a first sync is tried again (a
// cache whose Redis was down at New); it doubles up to the health interval.
const firstRetry = 50 * time.Millisecond

// loop syncs every health interval, and when kicked, until the Hub closes;
// while a cache has not had its first sync, it tries again sooner.
func (s *Syncer) loop() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	retry := call.Backoff{Min: firstRetry}
	for {
		if interval, _, n := s.health(); n > 0 {
			wait := interval
			if s.waiting() {
				retry.Max = max(interval, firstRetry)
				wait = min(interval, retry.Next())
			} else {
				retry.Reset()
			}
			t.Reset(wait)
		}
		select {
		case <-s.env.Done.Done():
			t.Stop()
			return
		case <-s.kick:
		case <-t.C:
		}
		t.Stop()
		s.round()
	}
}

// waiting reports whether a member has not had its first sync.
func (s *Syncer) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.members {
		if !c.isReady.Load() {
			return true
		}
	}
	return false
}

// health is the shortest health interval and timeout of the members, and
// how many there are.
func (s *Syncer) health() (interval, timeout time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.members {
		if interval == 0 || c.cfg.HealthInterval < interval {
			interval = c.cfg.HealthInterval
		}
		if timeout == 0 || c.cfg.HealthTimeout < timeout {
			timeout = c.cfg.HealthTimeout
		}
	}
	return interval, timeout, len(s.members)
}

// round probes the version until a probe is answered, then syncs every
// member, within the shortest health timeout.
func (s *Syncer) round() {
	_, timeout, _ := s.health()
	s.mu.Lock()
	members := make([]*Generations, 0, len(s.members))
	for c := range s.members {
		members = append(members, c)
	}
	s.mu.Unlock()
	if len(members) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.env.Done, timeout)
	defer cancel()
	if !s.probed {
		answered, refused := probeVersion(ctx, s.rdb)
		s.probed = answered
		if refused != nil {
			s.mu.Lock()
			s.refused = refused
			s.mu.Unlock()
			for _, c := range members {
				c.ready(refused)
			}
			return
		}
	}
	_ = syncMany(ctx, s.bound, s.rdb, members) // each member is told its part
}
