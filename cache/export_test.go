package cache

// The built-in stores, for the contract tests of package cache_test
// (localstore_test.go), which package localstoretest runs: it imports
// cache, so package cache's own tests cannot.

func NewOtterStore[V any](maxBytes int64) (LocalStore[V], error) {
	return newOtterStore[V](maxBytes)
}

func NewRistrettoStore[V any](maxBytes int64) (LocalStore[V], error) {
	return newRistrettoStore[V](maxBytes)
}
