package call_test

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
)

// TryGo counts its goroutine until Stop; after Stop it runs nothing, so a
// Wait after Stop sees no call begin behind its back. Go still counts.
func TestFlightTryGoRefusedAfterStop(t *testing.T) {
	var f call.Flight
	release := make(chan struct{})
	if !f.TryGo(func() { <-release }) {
		t.Fatal("TryGo refused before Stop")
	}
	if f.Wait(0) {
		t.Fatal("Wait saw no call while TryGo's runs")
	}
	close(release)
	f.Stop()
	if !f.Wait(time.Second) {
		t.Fatal("TryGo's call still counted after it returned")
	}
	if f.TryGo(func() { t.Error("ran after Stop") }) {
		t.Fatal("TryGo accepted after Stop")
	}
	done := make(chan struct{})
	f.Go(func() { <-done })
	if f.Wait(0) {
		t.Fatal("Go's call not counted after Stop")
	}
	close(done)
	if !f.Wait(time.Second) {
		t.Fatal("Go's call still counted")
	}
}
