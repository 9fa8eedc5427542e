package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress shows one line per run while it runs: rewritten in place on a
// terminal, printed once otherwise. A nil writer shows nothing.
type progress struct {
	w   io.Writer
	tty bool
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: isTerminal(w)}
}

// start shows the run's progress until the returned stop is called; stop
// returns once the line is final.
func (p *progress) start(scenario, mode string, span time.Duration, m *meter) (stop func()) {
	if p == nil || p.w == nil {
		return func() {}
	}
	line := func() string {
		el := time.Since(m.start)
		return fmt.Sprintf("  %-12s %-10s %5.1fs / %.1fs  %7d requests  %6d DB queries  %5d refused",
			scenario, mode, el.Seconds(), span.Seconds(), m.requests.Load(), m.total.Load(), m.refused.Load())
	}
	if !p.tty {
		fmt.Fprintf(p.w, "  %-12s %-10s running for %.1fs\n", scenario, mode, span.Seconds())
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			fmt.Fprintf(p.w, "\r\033[K%s", line())
			select {
			case <-done:
				fmt.Fprintf(p.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
