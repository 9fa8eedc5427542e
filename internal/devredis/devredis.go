// Package devredis gives the examples a Redis to talk to with no setup: the
// server named by REDIS_URL (or an explicit address) if any, else a
// redis-server spawned on a free loopback port if one is on PATH, else an
// in-process miniredis whose clock is advanced in real time so that TTLs run
// down as they would on a server.
package devredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// Redis is a running server and a client for it.
type Redis struct {
	Client redis.UniversalClient
	// Kind says what it is: "url", "redis-server" or "miniredis".
	Kind string
	// Addr is the address of the (first) server.
	Addr string

	cmd   *exec.Cmd
	dir   string
	mini  *miniredis.Miniredis
	stopT chan struct{}
	done  chan struct{}
}

// Open returns a Redis: addr if not empty (comma-separated addresses for a
// cluster, or a redis:// URL), else $REDIS_URL, else a spawned redis-server,
// else miniredis.
func Open(addr string) (*Redis, error) {
	if addr == "" {
		addr = os.Getenv("REDIS_URL")
	}
	if addr != "" {
		return dial(addr)
	}
	if path, err := exec.LookPath("redis-server"); err == nil {
		r, err := spawn(path)
		if err == nil {
			return r, nil
		}
		fmt.Fprintf(os.Stderr, "devredis: could not start redis-server (%v); using miniredis\n", err)
	}
	return startMini()
}

func dial(addr string) (*Redis, error) {
	var opts *redis.UniversalOptions
	if strings.Contains(addr, "://") {
		o, err := redis.ParseURL(addr)
		if err != nil {
			return nil, err
		}
		opts = &redis.UniversalOptions{Addrs: []string{o.Addr}, Password: o.Password, DB: o.DB, Username: o.Username}
	} else {
		opts = &redis.UniversalOptions{Addrs: strings.Split(addr, ",")}
	}
	c := redis.NewUniversalClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, kind.Errorf("cacheguard: devredis: %s: %w", addr, err)
	}
	return &Redis{Client: c, Kind: "url", Addr: opts.Addrs[0]}, nil
}

func spawn(path string) (*Redis, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "devredis")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	r := &Redis{Client: c, Kind: "redis-server", Addr: addr, cmd: cmd, dir: dir}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			r.Close()
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startMini() (*Redis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, err
	}
	r := &Redis{Client: redis.NewClient(&redis.Options{Addr: m.Addr()}), Kind: "miniredis", Addr: m.Addr(),
		mini: m, stopT: make(chan struct{}), done: make(chan struct{})}
	// miniredis only runs TTLs down when told to: tell it in real time.
	// Each FastForward walks every key under miniredis's lock, so the tick is
	// coarse; TTLs expire up to a tick late.
	go func() {
		defer close(r.done)
		last := time.Now()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stopT:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	return r, nil
}

// Restart stops and restarts a spawned redis-server on the same port, empty,
// as a crash and restart would leave it. It is not supported for the other
// kinds.
func (r *Redis) Restart() error {
	switch r.Kind {
	case "redis-server":
		r.cmd.Process.Kill()
		r.cmd.Wait()
		host, port, _ := net.SplitHostPort(r.Addr)
		cmd := exec.Command(r.cmd.Path, "--port", port, "--bind", host,
			"--save", "", "--appendonly", "no", "--dir", r.dir, "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			return err
		}
		r.cmd = cmd
		return nil
	case "miniredis":
		r.mini.FlushAll()
		return nil
	}
	return errors.New("cacheguard: devredis: restart needs a spawned redis-server")
}

// Close stops what Open started and closes the client.
func (r *Redis) Close() error {
	r.Client.Close()
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		os.RemoveAll(r.dir)
	}
	if r.mini != nil {
		close(r.stopT)
		<-r.done
		r.mini.Close()
	}
	return nil
}
