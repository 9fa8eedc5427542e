package cache

import (
	"context"
	"errors"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// refusedIn reports whether errs holds a refused subscription.
func refusedIn(errs []error) bool {
	for _, err := range errs {
		if errors.Is(err, ErrSubscriptionRefused) {
			return true
		}
	}
	return false
}

// A Redis 7 user created the usual way (ACL SETUSER app on >pw ~* +@all)
// has no channel permission (acl-pubsub-default is resetchannels): the
// cache's subscription is refused. New still succeeds; the refusal is
// reported as ErrSubscriptionRefused and counted, and the cache runs in the
// degraded mode of docs/acl.md: the local tier never serves, so a Delete or
// a tag invalidation made by another instance is seen at once.
func TestACLNoChannelPermission(t *testing.T) {
	for _, top := range redistest.ACLTopologies(true) {
		t.Run(top.Name, func(t *testing.T) {
			rdb := redistest.ACLClientRefused(t, top.New(t), nil, "no channels")
			ctx := context.Background()
			rows := &aclRows{}
			rows.rows.Store("k", "v1")
			var errsA, errsB errLog
			a, _ := aclLocalCache(t, rdb, &errsA, nil)
			b, _ := aclLocalCache(t, rdb, &errsB, nil)
			waitFor(t, func() bool { return refusedIn(errsB.all()) && refusedIn(errsA.all()) })
			if n := b.Stats().SubscriptionRefusals; n == 0 {
				t.Fatal("refusal not counted")
			}
			for i := 0; i < 3; i++ {
				if v, err := b.Get(ctx, "k", rows.load); err != nil || v != "v1" {
					t.Fatalf("b.Get: %q %v", v, err)
				}
			}
			rows.rows.Store("k", "v2")
			if err := a.Delete(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if v, err := b.Get(ctx, "k", rows.load); err != nil || v != "v2" {
				t.Fatalf("after a's Delete, b.Get: %q %v", v, err)
			}
			rows.rows.Store("k", "v3")
			if err := a.InvalidateTags(ctx, "all"); err != nil {
				t.Fatal(err)
			}
			if v, err := b.Get(ctx, "k", rows.load); err != nil || v != "v3" {
				t.Fatalf("after a's InvalidateTags, b.Get: %q %v", v, err)
			}
			if n := b.Stats().LocalHits; n != 0 {
				t.Fatalf("%d local hits without a subscription", n)
			}
		})
	}
}
