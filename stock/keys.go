package stock

import (
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// The Redis layout: wire.StockBucket. Every key of one bucket of one SKU
// shares the hash tag {ns:sku:b}, so each script touches a single slot;
// different buckets have different tags and so spread over a cluster.
type bucketKeys struct {
	meta, reqs, users, outbox, due, xin string
}

func (k bucketKeys) list() []string {
	return []string{k.meta, k.reqs, k.users, k.outbox, k.due, k.xin}
}

func keysFor(ns, sku string, b int) bucketKeys {
	k := wire.StockBucketKeys(ns, sku, b)
	return bucketKeys{meta: k.Meta, reqs: k.Reqs, users: k.Users, outbox: k.Outbox, due: k.Due, xin: k.Xin}
}

func salesKey(ns string) string { return wire.StockSalesKey(ns) }
func deadKey(ns string) string  { return wire.StockDeadKey(ns) }

// homeBucket is where a user's reservations, limit and request ids live:
// all of one user's requests meet in one script, whatever the bucket count.
func homeBucket(user string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(user))
	return int(h.Sum32() % uint32(n))
}

func hasBrace(s string) bool { return strings.ContainsAny(s, "{}") }

func checkID(s string, sentinel error, what string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", sentinel, what)
	}
	if len(s) > MaxIDLen {
		return fmt.Errorf("%w: %s of %d bytes (max %d)", sentinel, what, len(s), MaxIDLen)
	}
	// Ids travel through the scripts' JSON answers and into text columns,
	// which would replace or refuse bytes that are not UTF-8.
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not UTF-8", sentinel, what, s)
	}
	return nil
}

func checkSKU(sku string) error {
	if err := checkID(sku, ErrInvalidArgument, "sku"); err != nil {
		return err
	}
	if hasBrace(sku) {
		return fmt.Errorf("%w: sku %q contains a brace", ErrInvalidArgument, sku)
	}
	return nil
}
