package binlog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/redis/go-redis/v9"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is one test's world: a database with a users table on the shared
// MariaDB, a cache of user names in Redis, and the queue and target the
// Source invalidates through.
type env struct {
	m      *mariadb
	db     string
	rdb    redis.UniversalClient // queue and positions
	c      *cache.Cache[string]
	q      *consistency.Queue
	users  *consistency.Target
	pos    PositionStore
	loads  int
	commit chan commitInfo
	crdb   redis.UniversalClient // the cache's Redis
	rule   func(*Rule)           // adjusts the users rule before start
	src    *Source               // the last one started
}

type commitInfo struct {
	pos  Position
	keys []string
}

func newEnv(t testing.TB, rows int, cacheRDB redis.UniversalClient) *env {
	t.Helper()
	m := needMariaDB(t)
	e := &env{m: m, db: strings.ToLower(strings.NewReplacer("/", "_").Replace(t.Name())),
		commit: make(chan commitInfo, 1000)}
	m.exec(t, "", "DROP DATABASE IF EXISTS "+e.db, "CREATE DATABASE "+e.db)
	m.exec(t, e.db, "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(64))")
	for i := 1; i <= rows; i++ {
		m.exec(t, e.db, "INSERT INTO users VALUES ("+itoa(i)+", 'name"+itoa(i)+"')")
	}
	_, e.rdb = redistest.Single(t)
	if cacheRDB == nil {
		cacheRDB = e.rdb
	}
	e.crdb = cacheRDB
	var err error
	if e.c, err = cache.New(cacheRDB, cache.Values[string]{}, cache.WithPrefix("users:"), cache.WithLogger(quiet)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.c.Close() })
	if e.q, err = consistency.New(e.rdb, consistency.WithLogger(quiet)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.q.Close() })
	if e.users, err = e.q.Register("users", e.c); err != nil {
		t.Fatal(err)
	}
	e.pos = RedisPositions(e.rdb, "binlog:pos")
	// Start from here: the rows above are not changes to replay.
	if err := e.pos.Save(context.Background(), m.position(t)); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs a Source until the test ends or stop is called.
func (e *env) start(t testing.TB, serverID uint32, opts ...Option) (stop func()) {
	t.Helper()
	rule := Rule{Schema: e.db, Table: "users", Target: e.users, Keys: Column("id")}
	if e.rule != nil {
		e.rule(&rule)
	}
	src, err := New(Config{Addr: e.m.Addr, User: "root", Flavor: mysql.MariaDBFlavor, ServerID: serverID},
		e.pos, []Rule{rule},
		append([]Option{WithLogger(quiet), WithOnCommit(func(p Position, keys []string) {
			e.commit <- commitInfo{p, slices.Clone(keys)}
		})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.src = src
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitKeys waits for commits until all of keys were invalidated and returns
// the last commit seen.
func (e *env) waitKeys(t testing.TB, keys ...string) commitInfo {
	t.Helper()
	want := make(map[string]bool)
	for _, k := range keys {
		want[k] = true
	}
	limit := time.NewTimer(30 * time.Second) // a failure guard
	defer limit.Stop()
	for {
		select {
		case ci := <-e.commit:
			for _, k := range ci.keys {
				delete(want, k)
			}
			if len(want) == 0 {
				return ci
			}
		case <-limit.C:
			t.Fatalf("keys %v never invalidated", want)
		}
	}
}

func (e *env) load(ctx context.Context, key string) (string, error) {
	e.loads++
	name, ok, err := e.m.query(ctx, e.db, "SELECT name FROM users WHERE id = ?", key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", cache.ErrNotFound
	}
	return name, nil
}

func (e *env) get(t testing.TB, key string) string {
	t.Helper()
	v, err := e.c.Get(context.Background(), key, e.load)
	if errors.Is(err, cache.ErrNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// UPDATE, DELETE and INSERT statements (and an UPDATE of the primary key)
// invalidate the cached rows they touch; the latency from the statement's
// return to the invalidation is measured.
func TestRowChangesInvalidateCachedRows(t *testing.T) {
	e := newEnv(t, 3, nil)
	e.start(t, 101)
	for _, k := range []string{"1", "2", "3", "4", "10"} {
		e.get(t, k) // cache the rows and the absences
	}
	for _, step := range []struct {
		sql  string
		keys []string
		want map[string]string
	}{
		{"UPDATE users SET name = 'ada' WHERE id = 1", []string{"1"}, map[string]string{"1": "ada", "2": "name2"}},
		{"DELETE FROM users WHERE id = 2", []string{"2"}, map[string]string{"2": "<none>"}},
		{"INSERT INTO users VALUES (4, 'new')", []string{"4"}, map[string]string{"4": "new"}},
		{"UPDATE users SET id = 10 WHERE id = 3", []string{"3", "10"}, map[string]string{"3": "<none>", "10": "name3"}},
	} {
		for k := range step.want {
			e.get(t, k) // cached before the change
		}
		start := time.Now()
		e.m.exec(t, e.db, step.sql)
		e.waitKeys(t, step.keys...)
		latency := time.Since(start)
		for _, k := range step.keys {
			if got := e.get(t, k); got != step.want[k] {
				t.Fatalf("after %q: key %s = %q, want %q", step.sql, k, got, step.want[k])
			}
		}
		t.Logf("%-45s invalidated %v in %v", step.sql, step.keys, latency.Round(time.Microsecond))
	}
}

// A Source stopped and started again resumes from its stored position:
// every change made while it was down is invalidated.
func TestRestartResumesFromStoredPosition(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 20, nil)
	stop := e.start(t, 102)
	e.m.exec(t, e.db, "UPDATE users SET name = 'first' WHERE id = 1")
	e.waitKeys(t, "1")
	stop()
	before, _, _ := e.pos.Load(ctx)

	// Down: changes happen and readers cache what is now stale.
	for i := 2; i <= 20; i++ {
		e.get(t, itoa(i))
	}
	e.m.exec(t, e.db, "UPDATE users SET name = 'changed' WHERE id BETWEEN 2 AND 19", "DELETE FROM users WHERE id = 20")
	if got := e.get(t, "2"); got != "name2" {
		t.Fatalf("while down key 2 = %q, want the stale cached name2", got)
	}

	e.start(t, 102)
	var keys []string
	for i := 2; i <= 20; i++ {
		keys = append(keys, itoa(i))
	}
	ci := e.waitKeys(t, keys...)
	for i := 2; i <= 19; i++ {
		if got := e.get(t, itoa(i)); got != "changed" {
			t.Fatalf("key %d = %q after restart, want changed", i, got)
		}
	}
	if got := e.get(t, "20"); got != "<none>" {
		t.Fatalf("deleted row 20 still cached as %q", got)
	}
	if ci.pos.File == before.File && ci.pos.Offset <= before.Offset {
		t.Fatalf("position did not advance: %v then %v", before, ci.pos)
	}
	t.Logf("resumed from %v, caught up to %v", before, ci.pos)
}

// While the cache's Redis is down, the Source retries the delete and does
// not save a position past the change; once Redis is back it goes on.
func TestPositionWaitsForFailedDeletes(t *testing.T) {
	ctx := context.Background()
	cacheSrv, _ := redistest.Single(t)
	crdb := redis.NewClient(&redis.Options{Addr: cacheSrv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { crdb.Close() })
	e := newEnv(t, 2, crdb)
	p0, _, _ := e.pos.Load(ctx)
	errs := make(chan error, 1000)
	e.start(t, 103, WithBackoff(5*time.Millisecond, 20*time.Millisecond),
		WithErrorHandler(func(err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	cacheSrv.Kill()
	e.m.exec(t, e.db, "UPDATE users SET name = 'x' WHERE id = 1")
	for range 3 { // three failed tries
		select {
		case err := <-errs:
			if !errors.Is(err, cache.ErrRedis) {
				t.Fatalf("reported %v, want the delete's ErrRedis", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no retry reported")
		}
	}
	if p, _, _ := e.pos.Load(ctx); p != p0 {
		t.Fatalf("position moved to %v while the delete was failing (was %v)", p, p0)
	}
	if n, _ := e.q.Pending(ctx); n < 1 {
		t.Fatal("the failed Invalidate recorded no retry in the queue")
	}
	cacheSrv.Restart()
	ci := e.waitKeys(t, "1")
	if ci.pos == p0 {
		t.Fatalf("position %v did not advance after the delete succeeded", ci.pos)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	_, rdb := redistest.Single(t)
	q, _ := consistency.New(rdb, consistency.WithoutWorker())
	defer q.Close()
	c, _ := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("users:"))
	defer c.Close()
	tg, _ := q.Register("users", c)
	pos := RedisPositions(rdb, "p")
	good := []Rule{{Schema: "s", Table: "t", Target: tg, Keys: Column("id")}}
	for name, f := range map[string]func() error{
		"no addr":  func() error { _, err := New(Config{ServerID: 1}, pos, good); return err },
		"no id":    func() error { _, err := New(Config{Addr: "x:1"}, pos, good); return err },
		"no store": func() error { _, err := New(Config{Addr: "x:1", ServerID: 1}, nil, good); return err },
		"no rules": func() error { _, err := New(Config{Addr: "x:1", ServerID: 1}, pos, nil); return err },
		"flavor":   func() error { _, err := New(Config{Addr: "x:1", ServerID: 1, Flavor: "pg"}, pos, good); return err },
		"bad rule": func() error {
			_, err := New(Config{Addr: "x:1", ServerID: 1}, pos, []Rule{{Schema: "s", Table: "t"}})
			return err
		},
		"duplicate": func() error { _, err := New(Config{Addr: "x:1", ServerID: 1}, pos, append(good, good...)); return err },
		"backoff": func() error {
			_, err := New(Config{Addr: "x:1", ServerID: 1}, pos, good, WithBackoff(time.Second, time.Millisecond))
			return err
		},
		"flush keys": func() error { _, err := New(Config{Addr: "x:1", ServerID: 1}, pos, good, WithFlushKeys(0)); return err },
		"save every": func() error {
			_, err := New(Config{Addr: "x:1", ServerID: 1}, pos, good, WithSaveEvery(1, 0))
			return err
		},
	} {
		want := ErrInvalidArgument // the configuration and the rules
		if name == "backoff" || name == "flush keys" || name == "save every" {
			want = ErrInvalidOption // the options
		}
		if err := f(); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	// A nil Option is ignored; a nil logger stands for slog.Default().
	if _, err := New(Config{Addr: "x:1", ServerID: 1}, pos, good, nil, WithLogger(nil)); err != nil {
		t.Errorf("nil option, nil logger: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
