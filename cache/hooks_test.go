package cache

import "github.com/cacheguard/cacheguard/cache/internal/hook"

// hooks is the set of interleaving points the tests pin races with
// (internal/hook); withHooks installs one.
type hooks = hook.Set

func withHooks(h *hooks) Option { return func(c *config) { c.hooks = h } }

// hooks is the cache's hook set, installed by newCache or withHooks.
func (c *Cache[V]) hooks() *hooks { return c.cfg.hooks }
