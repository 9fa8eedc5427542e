package cache

import "github.com/cacheguard/cacheguard/cache/internal/local"

// The built-in stores, for the contract tests of package cache_test
// (localstore_test.go), which package localstoretest runs: it imports
// cache, so package cache's own tests cannot.

func NewOtterStore[V any](maxBytes int64) (LocalStore[V], error) {
	return local.NewOtterStore[V](maxBytes)
}

func NewRistrettoStore[V any](maxBytes int64) (LocalStore[V], error) {
	return local.NewRistrettoStore[V](maxBytes)
}
