package binlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/redis/go-redis/v9"
)

// fleetLease is the tailer's lease in the fleet tests; a takeover must
// come within the lease and a reconnection.
const (
	fleetLease    = time.Second
	fleetServerID = 501
	takeoverBound = fleetLease + 4*time.Second
)

// member is one instance of a fleet: a Source on a Redis client of its own,
// with the fleet's one configuration.
type member struct {
	src    *Source
	cancel context.CancelFunc
	done   chan error
	errs   atomic.Int64
}

// startFleet starts n Sources with one configuration (one server id, one
// position key), each on a Redis client of its own.
func startFleet(t *testing.T, e *env, n int) []*member {
	t.Helper()
	var ms []*member
	for range n {
		m := &member{done: make(chan error, 1)}
		client := redistest.FromSpec(t, redistest.Spec(e.rdb), nil)
		src, err := New(Config{Addr: e.m.Addr, User: "root", Flavor: mysql.MariaDBFlavor, ServerID: fleetServerID},
			RedisPositions(client, "binlog:pos"),
			[]Rule{{Schema: e.db, Table: "users", Target: e.users, Keys: Column("id")}},
			WithLogger(quiet), WithLease(fleetLease), WithErrorHandler(func(error) { m.errs.Add(1) }))
		if err != nil {
			t.Fatal(err)
		}
		m.src = src
		ctx, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		go func() { m.done <- src.Run(ctx) }()
		t.Cleanup(func() { m.stop(t) })
		ms = append(ms, m)
	}
	return ms
}

func (m *member) stop(t *testing.T) {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	if err := <-m.done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// tailers returns the members that tail now, waiting (up to within) until
// exactly one does and the others stand by.
func tailers(t *testing.T, ms []*member, within time.Duration) *member {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var tailing []*member
		standing := 0
		for _, m := range ms {
			switch m.src.Stats().Role {
			case RoleTailing:
				tailing = append(tailing, m)
			case RoleStandingBy:
				standing++
			}
		}
		live := 0
		for _, m := range ms {
			if m.cancel != nil {
				live++
			}
		}
		if len(tailing) == 1 && standing == live-1 {
			return tailing[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %d tailing, %d standing by, of %d live", within, len(tailing), standing, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watchPositions fails the test if the saved position ever moves back.
func watchPositions(t *testing.T, rdb redis.UniversalClient) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last Position
		for ctx.Err() == nil {
			raw, err := rdb.Get(ctx, "binlog:pos").Bytes()
			if err == nil {
				var p Position
				if json.Unmarshal(raw, &p) == nil && p.File != "" {
					if p.File < last.File || (p.File == last.File && p.Offset < last.Offset) {
						t.Errorf("position moved back from %v to %v", last, p)
					}
					last = p
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// updateAndWait changes row id and waits until the cache serves the new
// name, returning how long that took.
func updateAndWait(t *testing.T, e *env, id int, name string, bound time.Duration) time.Duration {
	t.Helper()
	key := itoa(id)
	e.get(t, key) // cached before the change
	start := time.Now()
	e.m.exec(t, e.db, fmt.Sprintf("UPDATE users SET name = '%s' WHERE id = %d", name, id))
	for {
		if e.get(t, key) == name {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("update of row %d to %q not invalidated within %v", id, name, bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Three instances, one configuration: one tails, two stand by. The tailer
// stops (a deploy, a crash): another takes over within the lease and a
// reconnection, and every update committed afterwards is invalidated
// within that bound; the saved position never moves back.
func TestFleetOneTailerTakeoverOnStop(t *testing.T) {
	e := newEnv(t, 5, nil)
	defer watchPositions(t, e.rdb)()
	ms := startFleet(t, e, 3)
	first := tailers(t, ms, 10*time.Second)
	if d := updateAndWait(t, e, 1, "before", takeoverBound); d > time.Second {
		t.Logf("first invalidation took %v", d)
	}
	stopped := time.Now()
	first.stop(t)
	next := tailers(t, ms, takeoverBound)
	took := time.Since(stopped)
	if next == first {
		t.Fatal("the stopped instance still tails")
	}
	var worst time.Duration
	for i := range 20 {
		d := updateAndWait(t, e, 1+i%5, fmt.Sprintf("after%d", i), takeoverBound)
		worst = max(worst, d)
	}
	t.Logf("takeover after the tailer stopped: %v; 20 updates after it invalidated, the slowest in %v; takeovers %d",
		took.Round(time.Millisecond), worst.Round(time.Millisecond), next.src.Stats().Takeovers)
	if next.src.Stats().Takeovers != 1 {
		t.Errorf("Takeovers = %d on the new tailer, want 1", next.src.Stats().Takeovers)
	}
}

// The tailer's lease is taken from it in Redis (deleted from the key, the
// position kept): another instance takes over, the old tailer stands by
// without saving, and updates go on being invalidated.
func TestFleetLeaseDeleted(t *testing.T) {
	e := newEnv(t, 5, nil)
	defer watchPositions(t, e.rdb)()
	ms := startFleet(t, e, 3)
	first := tailers(t, ms, 10*time.Second)
	updateAndWait(t, e, 1, "before", takeoverBound)
	err := e.rdb.Eval(context.Background(), `
local d = cjson.decode(redis.call('GET', KEYS[1]))
d.tailer = nil
d['until'] = nil
redis.call('SET', KEYS[1], cjson.encode(d))
return 1`, []string{"binlog:pos"}).Err()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(takeoverBound)
	for first.src.Stats().Role == RoleTailing && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tailers(t, ms, takeoverBound)
	for i := range 10 {
		updateAndWait(t, e, 1+i%5, fmt.Sprintf("after%d", i), takeoverBound)
	}
}

// An outside connection takes the fleet's server id (another replica, a
// second deployment): the tailer's stream is cut; the fleet reports it
// (no silence) within the bound, reconnects, and invalidation goes on.
func TestFleetServerIDTakenIsReported(t *testing.T) {
	e := newEnv(t, 5, nil)
	ms := startFleet(t, e, 3)
	tailers(t, ms, 10*time.Second)
	updateAndWait(t, e, 1, "before", takeoverBound)
	var before int64
	for _, m := range ms {
		before += m.errs.Load()
	}
	host, port, _ := splitAddr(e.m.Addr)
	outside := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: fleetServerID, Flavor: mysql.MariaDBFlavor,
		Host: host, Port: port, User: "root", Logger: quiet, DisableRetrySync: true})
	defer outside.Close()
	here := e.m.position(t)
	if _, err := outside.StartSync(mysql.Position{Name: here.File, Pos: here.Offset}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		var n int64
		for _, m := range ms {
			n += m.errs.Load()
		}
		if n > before {
			break
		}
		if time.Since(start) > takeoverBound {
			t.Fatalf("no error reported %v after another connection took the server id", takeoverBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the stream's loss was reported after %v", time.Since(start).Round(time.Millisecond))
	outside.Close()
	for i := range 5 {
		updateAndWait(t, e, 1+i, fmt.Sprintf("after%d", i), 2*takeoverBound)
	}
}

// The tailer's network to the database is cut (a blackhole between it and
// MariaDB; its Redis is fine, so it could go on renewing its lease): its
// stream falls silent, it reports it and stands by, and an instance that
// reaches the database takes over; updates are invalidated within the
// bound.
func TestFleetTailerCutFromTheDatabase(t *testing.T) {
	e := newEnv(t, 5, nil)
	defer watchPositions(t, e.rdb)()
	proxy, err := faultproxy.New(e.m.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	// The first instance reaches MariaDB through the proxy, and tails.
	direct := e.m.Addr
	e.m.Addr = proxy.Addr()
	cut := startFleet(t, e, 1)
	tailers(t, cut, 10*time.Second)
	e.m.Addr = direct
	ms := append(cut, startFleet(t, e, 2)...)
	updateAndWait(t, e, 1, "before", takeoverBound)
	start := time.Now()
	proxy.Blackhole(faultproxy.Both)
	var next *member
	for deadline := time.Now().Add(takeoverBound + 5*time.Second); ; {
		for _, m := range ms[1:] {
			if m.src.Stats().Role == RoleTailing {
				next = m
			}
		}
		if next != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no other instance took over %v after the tailer was cut from the database", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	if cut[0].errs.Load() == 0 {
		t.Error("the cut tailer reported nothing")
	}
	var worst time.Duration
	for i := range 10 {
		worst = max(worst, updateAndWait(t, e, 1+i%5, fmt.Sprintf("after%d", i), takeoverBound+5*time.Second))
	}
	t.Logf("takeover %v after the cut; 10 updates after it invalidated, the slowest in %v", took.Round(time.Millisecond), worst.Round(time.Millisecond))
}
