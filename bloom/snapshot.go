package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	bbloom "github.com/bits-and-blooms/bloom/v3"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// A snapshot is a Local filter on disk or on the wire:
//
//	magic "CGBF" | scheme u8 | flags u8 (bit 0: ready) | k u16 | n u64 | m u64
//	| ceil(m/64) words u64 | CRC-32C of everything before it, u32
//
// all little-endian. The scheme byte refuses a snapshot whose bits were placed
// by another location function; the checksum refuses a torn or altered file
// instead of loading a filter that silently rejects existing keys.
const (
	snapMagic     = "CGBF"
	snapHeaderLen = 4 + 1 + 1 + 2 + 8 + 8
	snapReady     = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteTo writes a snapshot of the filter to w (io.WriterTo). The bits are
// copied under the read lock and written after it is released, so a slow w
// does not hold up Adds.
func (l *Local) WriteTo(w io.Writer) (int64, error) {
	l.mu.RLock()
	words := append([]uint64(nil), l.f.BitSet().Words()...)
	l.mu.RUnlock()
	// Readiness is read after the copy: a Rebuild that completes in between
	// swaps in a filter the copy does not hold, and a stale "not ready" is the
	// safe side of that race.
	var flags byte
	if l.ready.Load() {
		flags |= snapReady
	}
	nw := wordsFor(l.p.M)
	if len(words) < nw {
		words = append(words, make([]uint64, nw-len(words))...)
	}
	words = words[:nw]

	cw := &countingWriter{w: w, crc: crc32.New(castagnoli)}
	hdr := make([]byte, snapHeaderLen)
	copy(hdr, snapMagic)
	hdr[4] = schemeVersion
	hdr[5] = flags
	binary.LittleEndian.PutUint16(hdr[6:], uint16(l.p.K))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(l.n))
	binary.LittleEndian.PutUint64(hdr[16:], l.p.M)
	if _, err := cw.Write(hdr); err != nil {
		return cw.n, kind.Errorf("cacheguard: bloom: writing snapshot: %w", err)
	}
	buf := make([]byte, 0, 64<<10)
	for i, word := range words {
		buf = binary.LittleEndian.AppendUint64(buf, word)
		if len(buf) == cap(buf) || i == len(words)-1 {
			if _, err := cw.Write(buf); err != nil {
				return cw.n, kind.Errorf("cacheguard: bloom: writing snapshot: %w", err)
			}
			buf = buf[:0]
		}
	}
	sum := binary.LittleEndian.AppendUint32(nil, cw.crc.Sum32())
	if _, err := w.Write(sum); err != nil {
		return cw.n, kind.Errorf("cacheguard: bloom: writing snapshot: %w", err)
	}
	return cw.n + 4, nil
}

// ReadLocal loads a filter written by (*Local).WriteTo. The filter is ready
// if it was when saved. Keys added after the snapshot was taken are not in
// it: add them again, or Rebuild, before trusting its negative answers.
func ReadLocal(r io.Reader, opts ...Option) (*Local, error) {
	cfg, err := newConfig(partLocal, opts)
	if err != nil {
		return nil, err
	}
	crc := crc32.New(castagnoli)
	tr := io.TeeReader(r, crc)
	hdr := make([]byte, snapHeaderLen)
	if _, err := io.ReadFull(tr, hdr); err != nil {
		return nil, corrupt("header", err)
	}
	if string(hdr[:4]) != snapMagic {
		return nil, corrupt("header", errors.New("not a bloom snapshot"))
	}
	if hdr[4] != schemeVersion {
		return nil, fmt.Errorf("%w: snapshot uses location scheme %d, this build uses %d", ErrMismatch, hdr[4], schemeVersion)
	}
	p := Params{K: uint(binary.LittleEndian.Uint16(hdr[6:])), M: binary.LittleEndian.Uint64(hdr[16:])}
	n := binary.LittleEndian.Uint64(hdr[8:])
	// Validate before allocating: m comes from the input.
	if err := p.validate(); err != nil {
		return nil, corrupt("header", err)
	}

	words := make([]uint64, wordsFor(p.M))
	buf := make([]byte, 64<<10)
	for i := 0; i < len(words); {
		chunk := min(len(buf)/8, len(words)-i)
		if _, err := io.ReadFull(tr, buf[:chunk*8]); err != nil {
			return nil, corrupt("bits", err)
		}
		for j := 0; j < chunk; j++ {
			words[i+j] = binary.LittleEndian.Uint64(buf[j*8:])
		}
		i += chunk
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, corrupt("checksum", err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return nil, corrupt("checksum", fmt.Errorf("got %08x, computed %08x", got, want))
	}

	l := newLocal(p, uint(n), bbloom.FromWithM(words, uint(p.M), p.K), cfg)
	l.ready.Store(hdr[5]&snapReady != 0)
	return l, nil
}

func corrupt(part string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return kind.Errorf("%w: %s: %w", ErrCorrupt, part, err)
}

func wordsFor(m uint64) int { return int((m + 63) / 64) }

// countingWriter counts and checksums what passes through it.
type countingWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc.Write(p[:n])
	return n, err
}
