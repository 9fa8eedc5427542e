package binlog

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCatchUp measures how fast a Source replays a backlog: 20,000
// transactions changing one row each, then 1,000 transactions changing 50
// rows each, written while it was stopped, replayed from the position before
// them into a real Redis. It reports transactions and rows per second of
// replay (each row invalidates one key). Run it with -benchtime 1x.
func BenchmarkCatchUp(b *testing.B) {
	for _, shape := range []struct {
		name      string
		txs, rows int
	}{{"1row", 20000, 1}, {"50rows", 1000, 50}} {
		b.Run(shape.name, func(b *testing.B) {
			e := newEnv(b, shape.rows, nil)
			p0, _, _ := e.pos.Load(context.Background())
			var stmts []string
			for i := range shape.txs {
				stmts = append(stmts, "UPDATE users SET name = 'v"+itoa(i)+"' WHERE id <= "+itoa(shape.rows))
			}
			e.m.exec(b, e.db, stmts...)
			end := e.m.position(b)
			b.ResetTimer()
			var elapsed time.Duration
			for range b.N {
				if err := e.pos.Save(context.Background(), p0); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				stop := e.start(b, 110)
				e.waitPos(b, end)
				elapsed += time.Since(start)
				stop()
			}
			sec := elapsed.Seconds() / float64(b.N)
			b.ReportMetric(float64(shape.txs)/sec, "tx/s")
			b.ReportMetric(float64(shape.txs*shape.rows)/sec, "rows/s")
		})
	}
}

// waitPos waits for a commit at or past end.
func (e *env) waitPos(tb testing.TB, end Position) {
	limit := time.NewTimer(120 * time.Second)
	defer limit.Stop()
	for {
		select {
		case ci := <-e.commit:
			if ci.pos.File > end.File || (ci.pos.File == end.File && ci.pos.Offset >= end.Offset) {
				return
			}
		case <-limit.C:
			tb.Fatalf("position never reached %v", end)
		}
	}
}
