package bloom

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	ctx := context.Background()
	l := mustLocal(t, 5000, 0.01)
	mustRebuild(t, l, present("row:", 5000))

	var buf bytes.Buffer
	n, err := l.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	got, err := ReadLocal(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Params() != l.Params() || !got.Ready() || got.n != 5000 {
		t.Fatalf("loaded %v ready=%v n=%d, want %v ready=true n=5000", got.Params(), got.Ready(), got.n, l.Params())
	}
	if !bytes.Equal(redisLayout(got), redisLayout(l)) {
		t.Fatal("loaded bits differ from the saved ones")
	}
	probes := append(present("row:", 5000), absent(7, 20000)...)
	a, _ := l.MayContainMany(ctx, probes)
	b, _ := got.MayContainMany(ctx, probes)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("answers differ for %q", probes[i])
		}
	}
	// The loaded filter is a working filter, not a frozen copy.
	got.Add(ctx, "later")
	if ok, _ := got.MayContain(ctx, "later"); !ok {
		t.Fatal("Add on a loaded filter lost")
	}
}

func TestSnapshotKeepsNotReady(t *testing.T) {
	l := mustLocal(t, 100, 0.01)
	l.Add(context.Background(), "a")
	var buf bytes.Buffer
	if _, err := l.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLocal(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ready() {
		t.Fatal("a snapshot taken during warm-up loads as ready")
	}
	if ok, _ := got.MayContain(context.Background(), "never-added"); !ok {
		t.Fatal("a not-ready loaded filter rejects keys")
	}
}

func TestSnapshotRefusesDamage(t *testing.T) {
	l := mustLocal(t, 1000, 0.01)
	mustRebuild(t, l, present("row:", 1000))
	var buf bytes.Buffer
	if _, err := l.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }

	for name, tc := range map[string]struct {
		data []byte
		want error
	}{
		"flipped bit":  {edit(func(b []byte) []byte { b[snapHeaderLen+10] ^= 4; return b }), ErrCorrupt},
		"truncated":    {good[:len(good)-9], ErrCorrupt},
		"no checksum":  {good[:len(good)-4], ErrCorrupt},
		"empty":        {nil, ErrCorrupt},
		"wrong magic":  {edit(func(b []byte) []byte { b[0] = 'X'; return b }), ErrCorrupt},
		"other scheme": {edit(func(b []byte) []byte { b[4] = schemeVersion + 1; return b }), ErrMismatch},
		// m is read before anything is allocated: a header claiming 2^40
		// bits must be refused, not trusted with a 128 GiB allocation.
		"huge m": {edit(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[16:], 1<<40); return b }), ErrTooLarge},
		"zero k": {edit(func(b []byte) []byte { binary.LittleEndian.PutUint16(b[6:], 0); return b }), ErrCorrupt},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadLocal(bytes.NewReader(tc.data)); !errors.Is(err, tc.want) {
				t.Fatalf("ReadLocal = %v, want %v", err, tc.want)
			}
		})
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		n := w.after
		w.after = 0
		return n, errors.New("disk full")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestSnapshotWriteError(t *testing.T) {
	l := mustLocal(t, 1000, 0.01)
	if _, err := l.WriteTo(&failingWriter{after: 30}); err == nil {
		t.Fatal("WriteTo hid a write error")
	}
}
