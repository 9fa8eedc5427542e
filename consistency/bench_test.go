package consistency

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// BenchmarkUpdate measures the cost Update adds around a write that does
// nothing: record the second delete, delete, move the record.
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(b)
	q, err := New(rdb, WithPrefix("bench:update"), WithLogger(quiet), WithoutWorker())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	defer rdb.Del(ctx, q.shards[0].Due("users"), q.shards[0].Data)
	users, _ := q.Register("users", unlinkInvalidator{rdb.Unlink})
	nop := func(context.Context) error { return nil }
	keys := []string{"bench:k"}
	b.ReportAllocs()
	for b.Loop() {
		if err := users.Update(ctx, keys, nop); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrain measures how fast one worker carries out recorded deletes
// (claim, delete, ack), in batches of the default size.
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(b)
	clk := newFakeClock()
	q, err := New(rdb, WithPrefix("bench:drain"), WithLogger(quiet), WithoutWorker(), withClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	users, _ := q.Register("users", unlinkInvalidator{rdb.Unlink})
	b.ReportAllocs()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		if err := users.InvalidateAfter(ctx, 0, "bench:k"+itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	done := 0
	for done < b.N {
		n, _, err := q.drain(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
}
