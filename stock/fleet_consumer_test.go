package stock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// countingSink counts the applications of each outbox entry and takes
// apply per Apply, as a database write would.
type countingSink struct {
	apply time.Duration
	mu    sync.Mutex
	seen  map[string]int // message id -> applications
	at    map[string]int // applications under way now
	twice int            // applications that overlapped another of the same entry
}

func newCountingSink(apply time.Duration) *countingSink {
	return &countingSink{apply: apply, seen: map[string]int{}, at: map[string]int{}}
}

func (s *countingSink) Apply(ctx context.Context, ev Event) error {
	s.mu.Lock()
	s.seen[ev.MessageID]++
	s.at[ev.MessageID]++
	if s.at[ev.MessageID] > 1 {
		s.twice++
	}
	s.mu.Unlock()
	time.Sleep(s.apply)
	s.mu.Lock()
	s.at[ev.MessageID]--
	s.mu.Unlock()
	return nil
}

// doubles is how many entries were applied more than once, and how many
// entries were applied at all.
func (s *countingSink) doubles() (doubles, entries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.seen {
		if n > 1 {
			doubles++
		}
	}
	return doubles, len(s.seen)
}

// A fleet of three consumers on separate clients, with a batch whose
// applications take longer than the claim idle time (100 entries of
// 20 ms against 1 s): no entry is applied twice, since a consumer keeps
// the entries it is working on its own (and gives up those another took)
// instead of letting them be claimed mid-batch.
func TestFleetConsumersApplyEachEntryOnce(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		const entries, apply, claimIdle = 400, 20 * time.Millisecond, time.Second
		ctx := t.Context()
		inv := newInv(t, rdb, WithBuckets(1))
		load(t, inv, "sku", entries)
		for i := range entries {
			if _, err := inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1); err != nil {
				t.Fatal(err)
			}
		}
		sink := newCountingSink(apply)
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range 3 {
			client := redistest.FromSpec(t, redistest.Spec(rdb), nil)
			fleetInv := newInv(t, client, WithBuckets(1))
			c := newConsumer(t, fleetInv, sink, WithClaimIdle(claimIdle), WithConsumerName(fmt.Sprintf("c%d", i)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.Run(runCtx)
			}()
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, n := sink.doubles()
			if n >= entries {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d entries applied after 60 s", n, entries)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// Long enough for a mid-batch claim to show: 2 x the claim idle.
		time.Sleep(2 * claimIdle)
		stop()
		wg.Wait()
		d, n := sink.doubles()
		t.Logf("%d entries applied, %d of them more than once (%d at the same moment)", n, d, sink.twice)
		if d > 0 {
			t.Fatalf("%d of %d entries applied more than once (%d at the same moment), no consumer died", d, n, sink.twice)
		}
	})
}

// Three consumers started one after another under one name (a name from a
// configuration every instance reads): the later two find it held by a
// live consumer, take names of their own and say so, and no entry is
// applied twice, though each resumes "its own" pending entries at start.
func TestFleetConsumersUnderOneName(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		const entries = 300
		ctx := t.Context()
		inv := newInv(t, rdb, WithBuckets(1))
		load(t, inv, "sku", entries)
		for i := range entries {
			if _, err := inv.Reserve(ctx, "sku", fmt.Sprintf("u%d", i), fmt.Sprintf("r%d", i), 1); err != nil {
				t.Fatal(err)
			}
		}
		sink := newCountingSink(2 * time.Millisecond)
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var consumers []*Consumer
		for range 3 {
			client := redistest.FromSpec(t, redistest.Spec(rdb), nil)
			c := newConsumer(t, newInv(t, client, WithBuckets(1)), sink, WithConsumerName("orders-consumer"), WithBatchSize(10))
			consumers = append(consumers, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.Run(runCtx)
			}()
			time.Sleep(30 * time.Millisecond) // started one after another
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, n := sink.doubles(); n >= entries {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("entries left unapplied after 60 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		wg.Wait()
		conflicts := 0
		for _, c := range consumers {
			conflicts += int(c.Stats().NameConflicts)
		}
		d, n := sink.doubles()
		t.Logf("%d entries applied, %d more than once; %d name conflicts", n, d, conflicts)
		if d > 0 {
			t.Fatalf("%d of %d entries applied more than once", d, n)
		}
		if conflicts != 2 {
			t.Fatalf("%d name conflicts reported, want 2 (the later two consumers)", conflicts)
		}
	})
}
