package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	s, err := r.ReadString('\n')
	if len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s, err
}

func newProxy(t *testing.T) *Proxy {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestForwardBlackholeHeal(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if s, err := roundTrip(c, r, "a", 5*time.Second); err != nil || s != "a" {
		t.Fatal(s, err)
	}
	for _, dir := range []Direction{ToServer, ToClient, Both} {
		p.Blackhole(dir)
		if _, err := roundTrip(c, r, "b", 100*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("blackhole %v: %v", dir, err)
		}
		p.Heal()
		// The held bytes arrive after the heal, in order.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if s, err := r.ReadString('\n'); err != nil || s != "b\n" {
			t.Fatalf("after heal %v: %q %v", dir, s, err)
		}
	}
}

func TestLinkFaultIsItsOwn(t *testing.T) {
	p := newProxy(t)
	c1, r1 := dial(t, p)
	c2, r2 := dial(t, p)
	roundTrip(c1, r1, "x", 5*time.Second)
	roundTrip(c2, r2, "x", 5*time.Second)
	links := p.Links()
	if len(links) != 2 {
		t.Fatalf("%d links", len(links))
	}
	// Fault the link serving c1: the server sees it come from ServerSideAddr,
	// and c1's local address is the client side of the same link.
	var l1 *Link
	for _, l := range links {
		if l.client.RemoteAddr().String() == c1.LocalAddr().String() {
			l1 = l
		}
	}
	l1.Blackhole(Both)
	if _, err := roundTrip(c1, r1, "y", 100*time.Millisecond); err == nil {
		t.Fatal("faulted link answered")
	}
	if s, err := roundTrip(c2, r2, "y", 5*time.Second); err != nil || s != "y" {
		t.Fatalf("other link: %q %v", s, err)
	}
	if l1.ServerSideAddr() == "" {
		t.Fatal("no server-side address")
	}
}

func TestLatency(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	p.SetLatency(50 * time.Millisecond)
	start := time.Now()
	if s, err := roundTrip(c, r, "a", 5*time.Second); err != nil || s != "a" {
		t.Fatal(s, err)
	}
	// Two one-way delays at least; an upper bound would be a timing claim.
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("round trip took %v with 50ms each way", d)
	}
}

func TestReset(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	roundTrip(c, r, "a", 5*time.Second)
	p.Reset()
	_, err := roundTrip(c, r, "b", 5*time.Second)
	if err == nil {
		t.Fatal("round trip over a reset link")
	}
	// New connections work.
	c2, r2 := dial(t, p)
	if s, err := roundTrip(c2, r2, "c", 5*time.Second); err != nil || s != "c" {
		t.Fatal(s, err)
	}
}
