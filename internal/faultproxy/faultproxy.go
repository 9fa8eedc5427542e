// Package faultproxy is a TCP proxy on loopback that injects network faults
// between a client and a server, for tests: a blackhole (bytes stop flowing,
// in one direction or both, while the connections stay open, as when a
// firewall or a dead link drops packets), added latency, and connection
// resets.
//
// A blackhole holds bytes rather than dropping them: a proxy goroutine stops
// forwarding, the kernel buffers fill and the sender eventually blocks,
// exactly as over a link that drops packets; when the fault is healed the
// held bytes flow again, in order, as TCP retransmission would deliver them.
//
// Faults set on the Proxy apply to every link, open or future; faults set on
// one Link apply to it alone. A Link knows the address the server sees it
// come from (ServerSideAddr), so a test can pick one connection by what the
// server reports about it (CLIENT LIST, for instance) and fault it alone.
package faultproxy

import (
	"net"
	"sync"
	"time"
)

// Direction selects which way bytes are faulted.
type Direction uint8

const (
	// ToServer is the client-to-server direction (requests).
	ToServer Direction = 1 << iota
	// ToClient is the server-to-client direction (replies, pushed messages).
	ToClient
	// Both directions.
	Both = ToServer | ToClient
)

// faults is a set of faults, on the proxy or on one link.
type faults struct {
	blocked Direction
	latency time.Duration
}

// Proxy accepts connections on a loopback port and forwards each to the
// target address, through the faults currently set.
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	f       faults
	changed chan struct{} // closed and replaced whenever a fault changes
	links   map[*Link]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Link is one proxied connection: the client's and the one to the server.
type Link struct {
	p              *Proxy
	client, server net.Conn
	f              faults // guarded by p.mu
	done           chan struct{}
	once           sync.Once
}

// New starts a proxy for target on a free loopback port.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, changed: make(chan struct{}), links: map[*Link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Blackhole stops forwarding bytes in dir on every link, open or future.
func (p *Proxy) Blackhole(dir Direction) { p.set(func() { p.f.blocked |= dir }) }

// SetLatency delays every chunk forwarded, in each direction, by d.
func (p *Proxy) SetLatency(d time.Duration) { p.set(func() { p.f.latency = d }) }

// Heal clears the proxy-wide faults (a link's own faults stay).
func (p *Proxy) Heal() { p.set(func() { p.f = faults{} }) }

// Reset closes every open link with a TCP reset on both sides, as a crashed
// middlebox or a server restart would. New connections are accepted as usual.
func (p *Proxy) Reset() {
	for _, l := range p.Links() {
		l.Reset()
	}
}

// Links returns the open links.
func (p *Proxy) Links() []*Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Link, 0, len(p.links))
	for l := range p.links {
		out = append(out, l)
	}
	return out
}

// Close stops accepting, closes every link and waits for the proxy's
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range p.Links() {
		l.close(false)
	}
	p.wg.Wait()
	return err
}

// ServerSideAddr is the address the server sees this link connect from.
func (l *Link) ServerSideAddr() string { return l.server.LocalAddr().String() }

// Blackhole stops forwarding bytes in dir on this link.
func (l *Link) Blackhole(dir Direction) { l.p.set(func() { l.f.blocked |= dir }) }

// Heal clears this link's own faults.
func (l *Link) Heal() { l.p.set(func() { l.f = faults{} }) }

// Reset closes this link with a TCP reset on both sides.
func (l *Link) Reset() { l.close(true) }

func (p *Proxy) set(change func()) {
	p.mu.Lock()
	change()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			resetConn(c)
			continue
		}
		l := &Link{p: p, client: c, server: s, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.links[l] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go l.pipe(c, s, ToServer)
		go l.pipe(s, c, ToClient)
	}
}

// pipe forwards src to dst chunk by chunk, holding each chunk while dir is
// blackholed and delaying it by the latency set.
func (l *Link) pipe(src, dst net.Conn, dir Direction) {
	defer l.p.wg.Done()
	defer l.close(false)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay, ok := l.wait(dir)
			if !ok {
				return
			}
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-l.done:
					t.Stop()
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or an error: the link ends both ways
		}
	}
}

// wait blocks while dir is blackholed and returns the latency to apply;
// false when the link closed meanwhile.
func (l *Link) wait(dir Direction) (time.Duration, bool) {
	for {
		l.p.mu.Lock()
		blocked := (l.p.f.blocked|l.f.blocked)&dir != 0
		delay := max(l.p.f.latency, l.f.latency)
		changed := l.p.changed
		l.p.mu.Unlock()
		if !blocked {
			return delay, true
		}
		select {
		case <-changed:
		case <-l.done:
			return 0, false
		}
	}
}

func (l *Link) close(reset bool) {
	l.once.Do(func() {
		close(l.done)
		if reset {
			resetConn(l.client)
			resetConn(l.server)
		} else {
			l.client.Close()
			l.server.Close()
		}
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
	})
}

// resetConn closes c with a TCP RST instead of a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
