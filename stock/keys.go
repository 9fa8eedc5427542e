package stock

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Redis layout. Every key of one bucket of one SKU shares the hash tag
// {ns:sku:b}, so each script touches a single slot; different buckets have
// different tags and so spread over a cluster.
//
//	{ns:sku:b}:m  hash   the bucket's counters and the sale's settings
//	{ns:sku:b}:r  hash   request id -> first answer (JSON)
//	{ns:sku:b}:u  hash   user -> units held in this sale
//	{ns:sku:b}:o  stream the outbox: one entry per state change
//	{ns:sku:b}:d  zset   request id -> due time (ms, Redis clock) of the hold
//	{ns:sku:b}:x  set    ids of stock transfers already credited to this bucket
//	ns:sales      hash   sku -> bucket count: the sales a consumer drains
//	ns:dead       stream dead letters of every sale
type bucketKeys struct {
	meta, reqs, users, outbox, due, xin string
}

func (k bucketKeys) list() []string {
	return []string{k.meta, k.reqs, k.users, k.outbox, k.due, k.xin}
}

func bucketTag(ns, sku string, b int) string {
	return "{" + ns + ":" + sku + ":" + strconv.Itoa(b) + "}"
}

func keysFor(ns, sku string, b int) bucketKeys {
	t := bucketTag(ns, sku, b)
	return bucketKeys{meta: t + ":m", reqs: t + ":r", users: t + ":u", outbox: t + ":o", due: t + ":d", xin: t + ":x"}
}

func salesKey(ns string) string { return ns + ":sales" }
func deadKey(ns string) string  { return ns + ":dead" }

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
	if err := checkID(sku, ErrInvalidSKU, "sku"); err != nil {
		return err
	}
	if hasBrace(sku) {
		return fmt.Errorf("%w: %q contains a brace", ErrInvalidSKU, sku)
	}
	return nil
}
