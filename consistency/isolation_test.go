package consistency

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// poisonInvalidator runs a real Invalidator but fails every call that
// includes the poison key, as a delete of a key that some fault keeps
// failing would.
type poisonInvalidator struct {
	Invalidator
	poison string
}

var errPoison = errors.New("poisoned key")

func (p poisonInvalidator) Delete(ctx context.Context, keys ...string) error {
	if slices.Contains(keys, p.poison) {
		return errPoison
	}
	return p.Invalidator.Delete(ctx, keys...)
}

// One entry whose delete keeps failing is retried and dead-lettered on its
// own: the twenty good entries claimed in the same batch are deleted and
// acknowledged at the first pass.
func TestPoisonEntryFailsAlone(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	q := newQueue(t, rdb, withClock(clk), WithoutWorker(), WithMaxAttempts(2),
		WithBackoff(time.Second, time.Second), WithBatchSize(100))
	c := newCache[string](t, rdb)
	users := register(t, q, "users", poisonInvalidator{c, "poison"})
	var keys []string
	for i := range 20 {
		keys = append(keys, "good"+itoa(i))
	}
	for _, k := range keys {
		if err := c.Set(ctx, k, "old"); err != nil {
			t.Fatal(err)
		}
		if err := users.InvalidateAfter(ctx, 0, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := users.InvalidateAfter(ctx, 0, "poison"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := q.drain(ctx); err != nil || n != 21 {
		t.Fatalf("first pass drained %d, %v", n, err)
	}
	st := q.Stats()
	if st.Done != 20 || st.Retries != 1 || st.DeadLettered != 0 {
		t.Fatalf("after the first pass: %+v; want 20 done, 1 retry", st)
	}
	for _, k := range keys {
		if n := rdb.Exists(ctx, prefixFor(t)+"c:"+k).Val(); n != 0 {
			t.Fatalf("good key %s still cached", k)
		}
	}
	clk.Advance(time.Second)
	if n, _, err := q.drain(ctx); err != nil || n != 1 {
		t.Fatalf("second pass drained %d, %v; want the poison entry only", n, err)
	}
	st = q.Stats()
	if st.Done != 20 || st.DeadLettered != 1 {
		t.Fatalf("after the retry budget: %+v; want 20 done, 1 dead letter", st)
	}
	letters, err := q.DeadLetters(ctx, 100)
	if err != nil || len(letters) != 1 || !slices.Equal(letters[0].Keys, []string{"poison"}) {
		t.Fatalf("dead letters %+v, %v; want the poison entry alone", letters, err)
	}
	if n, err := q.DeadLetterCount(ctx, "users"); err != nil || n != 1 {
		t.Fatalf("dead letter count %d, %v", n, err)
	}
	if n, _ := q.Pending(ctx); n != 0 {
		t.Fatalf("%d pending", n)
	}
}
