package cache

import "github.com/cacheguard/cacheguard/internal/wire"

// rkey is the Redis key of key's entry in the current generation.
func (c *Cache[V]) rkey(key string) string {
	_, rkey := c.genKey(key)
	return rkey
}

// genKey is rkey with the generation it was built in.
func (c *Cache[V]) genKey(key string) (gen uint64, rkey string) {
	gen = c.gen.Load()
	return gen, wire.EntryKey(c.cfg.prefix, gen, key)
}
