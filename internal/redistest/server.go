package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that forbids the miniredis fallback
// and the skips.
const RequireEnv = "CACHEGUARD_REQUIRE_REDIS"

// startTimeout bounds how long a redis-server may take to answer PING.
const startTimeout = 15 * time.Second

// Server is one redis-server process (or, in fallback mode, a miniredis).
type Server struct {
	Addr string
	// Mini is non-nil when the server is an in-process miniredis fallback.
	// Its TTLs run down in real time, as on a server (see runClock);
	// Mini.FastForward moves them on further.
	Mini *miniredis.Miniredis

	t     testing.TB
	dir   string
	port  int
	extra []string
	// sentinel: run as a Sentinel, from a config file in dir (Sentinel
	// rewrites it).
	sentinel []string
	// tls: listen with TLS only (tls.go).
	tls bool

	mu  sync.Mutex
	cmd *exec.Cmd
}

func required() bool { return os.Getenv(RequireEnv) == "1" }

// ServerPath returns the redis-server binary on PATH, or "" when there is none.
func ServerPath() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

// Single starts one server and returns it with a connected client. Without
// redis-server it falls back to miniredis (unless CACHEGUARD_REQUIRE_REDIS=1).
func Single(t testing.TB) (*Server, redis.UniversalClient) {
	t.Helper()
	if ServerPath() == "" {
		if required() {
			t.Fatalf("redistest: redis-server not on PATH and %s=1", RequireEnv)
		}
		t.Logf("redistest: redis-server not on PATH; falling back to miniredis")
		m := miniredis.RunT(t)
		t.Cleanup(runClock(m))
		s := &Server{Addr: m.Addr(), Mini: m, t: t}
		return s, s.Client()
	}
	s := Start(t)
	return s, s.Client()
}

// RealSingle is Single without the miniredis fallback: the test is skipped
// (or fails under CACHEGUARD_REQUIRE_REDIS=1) when redis-server is missing.
func RealSingle(t testing.TB) (*Server, redis.UniversalClient) {
	t.Helper()
	NeedServer(t)
	s := Start(t)
	return s, s.Client()
}

// NeedServer skips the test (fails it under CACHEGUARD_REQUIRE_REDIS=1) when no
// redis-server is on PATH.
func NeedServer(t testing.TB) {
	t.Helper()
	if ServerPath() != "" {
		return
	}
	if required() {
		t.Fatalf("redistest: redis-server not on PATH and %s=1", RequireEnv)
	}
	t.Skip("redistest: redis-server not on PATH; this test needs a real server (install redis-server)")
}

// Start launches a redis-server process with the extra config directives given
// as "name value" pairs (e.g. "cluster-enabled", "yes").
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	NeedServer(t)
	return launch(t, &Server{extra: extra})
}

// launch starts the process proto describes on a free port, trying a few.
func launch(t testing.TB, proto *Server) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{t: t, dir: t.TempDir(), port: port, extra: proto.extra, sentinel: proto.sentinel, tls: proto.tls,
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.stop)
			return s
		}
	}
	t.Fatalf("redistest: could not start redis-server: %v", lastErr)
	return nil
}

// freePort finds a loopback port whose cluster bus port (port+10000) is free too.
func freePort() (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free port pair found")
}

func (s *Server) start() error {
	var args []string
	if s.sentinel != nil {
		conf := filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(strings.Join(s.sentinel, "\n")+"\n"), 0o600); err != nil {
			return err
		}
		args = []string{conf, "--sentinel"}
	}
	if s.tls {
		targs, err := tlsArgs(s.dir, strconv.Itoa(s.port))
		if err != nil {
			return err
		}
		args = append(args, targs...)
	} else {
		args = append(args, "--port", strconv.Itoa(s.port))
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	)
	if s.sentinel == nil {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	for i := 0; i+1 < len(s.extra); i += 2 {
		args = append(args, "--"+s.extra[i], s.extra[i+1])
	}
	cmd := exec.Command(ServerPath(), args...)
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()

	o := s.Options()
	o.MaxRetries, o.DialTimeout = -1, time.Second
	c := redis.NewClient(o)
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, log)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return fmt.Errorf("redis-server on %s did not answer PING: %v", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a new client for this server, closed when the test ends.
func (s *Server) Client() *redis.Client {
	opts := s.Options()
	if s.Mini != nil {
		// miniredis runs every script in a fresh Lua VM inside the test
		// process; under -race on a busy machine a pipeline of scripts can
		// outlast go-redis's 3 s read timeout without anything being wrong.
		opts.ReadTimeout, opts.WriteTimeout = 30*time.Second, 30*time.Second
	}
	c := redis.NewClient(opts)
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Options are the options of a client of this server (TLS for a server
// started with StartTLS), for a client the test closes itself.
func (s *Server) Options() *redis.Options {
	o := &redis.Options{Addr: s.Addr}
	if s.tls {
		o.TLSConfig = ClientTLS(s.t)
	}
	return o
}

// Kill stops the process with SIGKILL, as a crash would. Restart brings it back.
func (s *Server) Kill() {
	if s.Mini != nil {
		s.Mini.Close()
		return
	}
	s.stop()
}

// Restart starts a killed server again on the same address, empty.
func (s *Server) Restart() {
	s.t.Helper()
	if s.Mini != nil {
		if err := s.Mini.Restart(); err != nil {
			s.t.Fatalf("redistest: restart miniredis: %v", err)
		}
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		cmd.Process.Kill()
		// Wait until the port is released, so a Restart can bind it again.
		for i := 0; i < 200; i++ {
			c, err := net.DialTimeout("tcp", s.Addr, 50*time.Millisecond)
			if err != nil {
				return
			}
			c.Close()
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// RealSingleDefault is RealSingle with a client made with go-redis's
// defaults (ContextTimeoutEnabled off: go-redis ignores a context's deadline
// while it reads a reply), for the tests that a call stays bounded by its
// caller's context on any client.
func RealSingleDefault(t testing.TB) (*Server, *redis.Client) {
	t.Helper()
	srv, _ := RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return srv, rdb
}
