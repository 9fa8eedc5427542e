//go:build unix

package binlog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// The environment a fleet child reads: the database, the Redis spec and
// the MariaDB address.
const (
	childDB    = "CACHEGUARD_FLEET_DB"
	childRedis = "CACHEGUARD_FLEET_REDIS"
	childMaria = "CACHEGUARD_FLEET_MARIADB"
)

// TestFleetChild is one instance of the fleet in a process of its own,
// started by the tests below: it runs a Source with the fleet's
// configuration (and a cache and queue of its own) until it is killed.
func TestFleetChild(t *testing.T) {
	if _, ok := redistest.IsChild(); !ok || os.Getenv(childDB) == "" {
		t.Skip("a fleet instance, run by the fleet tests in a process of its own")
	}
	rdb := redistest.FromSpec(t, os.Getenv(childRedis), nil)
	c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("users:"), cache.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, err := consistency.New(rdb, consistency.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	users, err := q.Register("users", c)
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(Config{Addr: os.Getenv(childMaria), User: "root", Flavor: mysql.MariaDBFlavor, ServerID: fleetServerID},
		RedisPositions(rdb, "binlog:pos"),
		[]Rule{{Schema: os.Getenv(childDB), Table: "users", Target: users, Keys: Column("id")}},
		WithLogger(quiet), WithLease(fleetLease))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Run(context.Background()); err != nil { // until killed
		t.Fatal(err)
	}
}

// startChild starts a fleet instance in a process of its own and waits
// until it tails (the position key names a tailer while the two other
// instances, in this process, stand by).
func startChild(t *testing.T, e *env) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), redistest.ChildEnv+"=0", childDB+"="+e.db,
		childRedis+"="+redistest.Spec(e.rdb), childMaria+"="+e.m.Addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// childTails waits until the child holds the lease: a tailer is named in
// the key while none of ms tails.
func childTails(t *testing.T, e *env, ms []*member) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		raw, _ := e.rdb.Get(context.Background(), "binlog:pos").Result()
		mine := false
		for _, m := range ms {
			mine = mine || m.src.Stats().Role == RoleTailing
		}
		if !mine && len(raw) > 0 && containsTailer(raw) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never tailed")
}

func containsTailer(raw string) bool {
	var v map[string]any
	if err := jsonUnmarshal(raw, &v); err != nil {
		return false
	}
	_, ok := v["tailer"]
	return ok
}

// A tailer in a process of its own is SIGKILLed, or SIGSTOPped and
// resumed later: an instance standing by takes over within the lease and a
// reconnection, every update committed afterwards is invalidated within
// that bound, and the frozen tailer, once resumed, stands down without
// moving the saved position back.
func TestFleetTailerKilledOrFrozen(t *testing.T) {
	redistest.NeedServer(t)
	for _, how := range []string{"SIGKILL", "SIGSTOP"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t, 5, nil)
			defer watchPositions(t, e.rdb)()
			child := startChild(t, e)
			// The child takes the lease first; then the two standing by.
			raw := ""
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !containsTailer(raw); {
				raw, _ = e.rdb.Get(context.Background(), "binlog:pos").Result()
				time.Sleep(10 * time.Millisecond)
			}
			ms := startFleet(t, e, 2)
			childTails(t, e, ms)
			updateAndWait(t, e, 1, "before", takeoverBound)
			sig := syscall.SIGKILL
			if how == "SIGSTOP" {
				sig = syscall.SIGSTOP
			}
			start := time.Now()
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			next := tailers(t, ms, takeoverBound)
			took := time.Since(start)
			var worst time.Duration
			for i := range 10 {
				worst = max(worst, updateAndWait(t, e, 1+i%5, fmt.Sprintf("after%d", i), takeoverBound))
			}
			if how == "SIGSTOP" {
				if err := child.Process.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				// Resumed, the old tailer finds its lease gone; meanwhile
				// updates go on being invalidated, and the position never
				// moves back (watchPositions).
				for i := range 10 {
					worst = max(worst, updateAndWait(t, e, 1+i%5, fmt.Sprintf("resumed%d", i), takeoverBound))
				}
				tailers(t, ms, takeoverBound) // still one of the two
			}
			t.Logf("%s: takeover in %v, 10 updates after it invalidated, the slowest in %v; takeovers %d",
				how, took.Round(time.Millisecond), worst.Round(time.Millisecond), next.src.Stats().Takeovers)
		})
	}
}

func jsonUnmarshal(raw string, v any) error { return json.Unmarshal([]byte(raw), v) }
