package main

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// inspect recognises every key layout of internal/wire: each example key,
// of its type and with its value, is counted under its layout's name (a
// Mutex's hash, which only its fields tell, once its second read confirms
// it). A layout added to wire (its test makes Layouts list it) fails here
// until inspect knows it.
func TestRecogniseEveryLayout(t *testing.T) {
	for _, l := range wire.Layouts() {
		if l.Type == "channel" {
			continue // never a key: SCAN does not return it
		}
		s := newScanner(inspectOptions{maxLease: time.Minute, top: 1}, nil)
		head := []byte(l.Value)[:min(len(l.Value), wire.HeaderSize)]
		_, follow := s.recognise(context.Background(), l.Key, l.Type, head, int64(len(l.Value)), -1, "node", time.Now())
		_, named := wire.KeyLayout(l.Key, l.Type)
		switch n := s.rep.Keys[l.Name]; {
		case n == 1 && len(s.rep.Keys) == 1:
		case n == 0 && !named && follow && (l.Type == "hash" || l.Name == wire.LayoutBinlogPosition):
		default:
			t.Errorf("%s %q (%s): counted %v, second read %v", l.Type, l.Key, l.Name, s.rep.Keys, follow)
		}
	}
}
