//go:build unix

package lock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// frozen stops a redis-server process with SIGSTOP (as a stalled VM or a
// long fork would) and resumes it with SIGCONT; the test's cleanup always
// resumes it.
type frozen struct {
	pid int
	mu  sync.Mutex
	on  bool
}

// freezer finds the process of the server behind addr (INFO server).
func freezer(t testing.TB, addr string) *frozen {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			f := &frozen{pid: pid}
			t.Cleanup(f.resume)
			return f
		}
	}
	t.Fatal("no process_id in INFO server")
	return nil
}

func (f *frozen) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		f.on = true
		syscall.Kill(f.pid, syscall.SIGSTOP)
	}
}

func (f *frozen) resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		f.on = false
		syscall.Kill(f.pid, syscall.SIGCONT)
	}
}

// abandonOnFrozen freezes the server behind addr and makes a TryLock of c
// give up at a 100 ms deadline, its call left running inside go-redis (on
// a client that does not apply deadlines itself). The server is resumed
// when the test ends, or by the returned freeze's resume.
func abandonOnFrozen(t *testing.T, c *Client, addr, name string) *frozen {
	t.Helper()
	f := freezer(t, addr)
	f.freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Mutex(name).TryLock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock against a frozen server: %v", err)
	}
	return f
}
