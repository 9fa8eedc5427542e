package main

import (
	"testing"
	"time"
)

// FuzzFormats feeds arbitrary keys and values to every recogniser: foreign
// data may be misread as nothing, never panic.
func FuzzFormats(f *testing.F) {
	for _, s := range []string{"", "{", "{}", "{a}", "{a}:due:", "{a}:due:t", "x{a}:rw", "\xfe", "\xfec\x01",
		"\xfel0123456789abcdef", "m=1 k=2 v=1 ready=1", "m=x", "m=0", "ready=1 k=-1 m=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		parseHeader(b)
		isPlaceholder(b, int64(len(b)))
		queueDue(s)
		hashTagged(s)
		bloomConfig(s)
		lockName(s)
		busiestSecond([]int64{int64(len(s)), 0, -5})
	})
}

func TestParseHeaderReadsAnEnvelope(t *testing.T) {
	h := []byte{0xFE, 'c', 1, flagNull | flagCompressed, 0, 0, 0, 0, 0, 0, 0, 0}
	ms := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	for i := 7; i >= 0; i-- {
		h = append(h, byte(ms>>(8*i)))
	}
	h = append(h, make([]byte, 8)...)
	got, ok := parseHeader(h)
	if !ok || got.flags != flagNull|flagCompressed || got.expiry.UnixMilli() != ms {
		t.Fatalf("parseHeader = %+v, %v", got, ok)
	}
	if _, ok := parseHeader(h[:headerSize-1]); ok {
		t.Fatal("a short header parsed")
	}
}

func TestBusiestSecondCountsAcrossABoundary(t *testing.T) {
	// 3 keys at 1.9 s and 2 keys at 2.1 s are one burst, whatever the second
	// boundary says; one at 3.5 s is not part of it.
	at, n := busiestSecond([]int64{1900, 2100, 1900, 3500, 2100, 1900})
	if n != 5 || at != 1900 {
		t.Fatalf("busiestSecond = %d at %d, want 5 at 1900", n, at)
	}
	if _, n := busiestSecond(nil); n != 0 {
		t.Fatalf("no expiries: %d", n)
	}
}
