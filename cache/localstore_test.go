package cache_test

import (
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/cache/localstoretest"
)

// Both built-in stores keep the LocalStore contract.
func TestLocalStoreContract(t *testing.T) {
	for _, s := range []struct {
		name string
		new  func(maxBytes int64) (cache.LocalStore[string], error)
	}{
		{"otter", cache.NewOtterStore[string]},
		{"ristretto", cache.NewRistrettoStore[string]},
	} {
		t.Run(s.name, func(t *testing.T) {
			localstoretest.Run(t, func(t *testing.T, maxBytes int64) cache.LocalStore[string] {
				store, err := s.new(maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				return store
			})
		})
	}
}
