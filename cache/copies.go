package cache

import (
	"strings"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/redis/go-redis/v9"
)

// Hot-key copies relieve the master that owns a hot key, where no local tier
// may serve it (a value too big for every process's memory, or one that must
// be fresher than a local TTL allows): the reads of the key spread over
// copies on other masters. See docs/scale.md.

// maxCopies bounds WithHotKeyCopies's n: beyond it, a write's deletes of the
// copies cost more than the spread is worth.
const maxCopies = 16

// WithHotKeyCopies keeps up to n copies of each key that the WithHotKeys
// detector calls hot, on n masters of a Redis Cluster other than the key's
// own, and spreads the key's reads over the key and its copies at random.
// A read that finds its copy missing reads the key itself and writes the
// copy; a copy lives at most ttl and never past its entry's expiry, and
// stops being written when the key cools. Every write of the key (Set,
// Delete, the versioned writes, MarkStale, and through them delayed double
// deletes and binlog invalidations) deletes its copies before it returns;
// Clear and InvalidateTags reach them as they reach the key. A copy is thus
// never served older than a completed write, except when the write could
// not delete it (its master unreachable) or a read that began before the
// write wrote it after: then for at most ttl.
//
// It needs a cluster client and WithHotKeys (with or without a local tier);
// the prefix must not contain a brace, since a hash tag in it would put
// every copy on the key's own slot. GetMany reads the keys themselves.
func WithHotKeyCopies(n int, ttl time.Duration) Option {
	return func(c *config) {
		if n < 1 || n > maxCopies {
			c.errs.Invalid("hot-key copies %d must be between 1 and %d", n, maxCopies)
		}
		c.checkTTL("hot-key copy TTL", ttl, entry.MinTTL)
		c.copies, c.copyTTL = n, ttl
	}
}

// validateCopies checks WithHotKeyCopies against the rest of the
// configuration and the client.
func (c *config) validateCopies(rdb redis.UniversalClient) {
	if c.copies == 0 {
		return
	}
	if c.local.hot == nil {
		c.errs.Invalid("WithHotKeyCopies needs WithHotKeys: the detector decides which keys are copied")
	}
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		c.errs.Invalid("WithHotKeyCopies needs a Redis Cluster client: one node has no other master to copy to")
	}
	c.noBraces("WithHotKeyCopies", "every copy")
}

// noBraces refuses, for option, a prefix with a brace: a hash tag in it
// would decide the slot of what (a key of the option's, placed by a tag
// of its own after the prefix) instead.
func (c *config) noBraces(option, what string) {
	if strings.ContainsAny(c.prefix, "{}") {
		c.errs.Invalid("%s with prefix %q: a brace in it would decide the slot of %s", option, c.prefix, what)
	}
}

// newCopies is the placement of the copies, nil when off.
func (c *config) newCopies(ms *transport.Masters) *transport.Copies {
	if c.copies == 0 || ms == nil {
		return nil
	}
	return transport.NewCopies(ms, c.prefix, c.copies, c.copyTTL)
}

// newMasters is the view of a cluster client's masters that copies and
// the replication barrier share; nil for another client.
func newMasters(rdb redis.UniversalClient) *transport.Masters {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return transport.NewMasters(cc)
	}
	return nil
}
