package lock

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func rwTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("readers share, writer excludes", func(t *testing.T) { testRWShare(t, rdb) })
	t.Run("writer woken by last reader", func(t *testing.T) { testRWWriterWoken(t, rdb) })
	t.Run("readers woken by writer", func(t *testing.T) { testRWReadersWoken(t, rdb) })
	t.Run("dead reader frees its share", func(t *testing.T) { testRWDeadReader(t, rdb) })
	t.Run("writer not starved", func(t *testing.T) { testRWWriterNotStarved(t, rdb) })
}

func testRWShare(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	rw := c.RWMutex("rw")
	r1, err := rw.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.TryRLock(ctx)
	if err != nil {
		t.Fatalf("second reader refused: %v", err)
	}
	w, err := rw.TryLock(ctx)
	mustNotObtain(t, w, err)
	// Upgrading would wait for itself forever.
	if _, err := rw.Lock(r1.Context()); !errors.Is(err, ErrUpgrade) {
		t.Fatalf("upgrade: %v, want ErrUpgrade", err)
	}
	if ttl, err := r1.TTL(ctx); err != nil || ttl <= 0 {
		t.Fatalf("reader ttl %v %v", ttl, err)
	}
	r1.Unlock(ctx)
	w, err = rw.TryLock(ctx)
	mustNotObtain(t, w, err)
	r2.Unlock(ctx)

	w, err = rw.TryLock(ctx)
	if err != nil {
		t.Fatalf("writer refused with no reader: %v", err)
	}
	r, err := rw.TryRLock(ctx)
	mustNotObtain(t, r, err)
	w2, err := rw.TryLock(ctx)
	mustNotObtain(t, w2, err)
	// The writer may also read (downgrade); the read sees its token.
	down, err := rw.TryRLock(w.Context())
	if err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	if down.Token() != w.Token() {
		t.Fatalf("read token %d, writer's %d", down.Token(), w.Token())
	}
	w.Unlock(ctx)
	// The writer left; its read hold still excludes other writers.
	w2, err = rw.TryLock(ctx)
	mustNotObtain(t, w2, err)
	down.Unlock(ctx)
	w3, err := rw.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w3.Token() <= w.Token() {
		t.Fatalf("writer token %d after %d", w3.Token(), w.Token())
	}
	w3.Unlock(ctx)
	for _, k := range []string{"cacheguard:lock:{rw}:rw", "cacheguard:lock:{rw}:readers", "cacheguard:lock:{rw}:holds"} {
		if n, _ := rdb.Exists(ctx, k).Result(); n != 0 {
			t.Fatalf("%s left behind", k)
		}
	}
}

func testRWWriterWoken(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	readers := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
	writerC := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	hook := hookWaiting(writerC.engine)
	r1, _ := readers.RWMutex("rww").RLock(ctx)
	r2, _ := readers.RWMutex("rww").RLock(ctx)
	got := make(chan error, 1)
	go func() {
		w, err := writerC.RWMutex("rww").Lock(ctx)
		if err == nil {
			err = w.Unlock(ctx)
		}
		got <- err
	}()
	hook.next(t, "rww")
	r1.Unlock(ctx)
	// One reader is left: the lock is still not free for writing.
	wx, err := newClient(t, rdb).RWMutex("rww").TryLock(ctx)
	mustNotObtain(t, wx, err)
	r2.Unlock(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writer not woken when the last reader left")
	}
}

func testRWReadersWoken(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	writerC := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
	readC := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	hook := hookWaiting(readC.engine)
	w, err := writerC.RWMutex("rwr").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []*Handle
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := readC.RWMutex("rwr").RLock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held = append(held, r)
			mu.Unlock()
		}()
	}
	for i := 0; i < n; i++ {
		hook.next(t, "rwr")
	}
	w.Unlock(ctx)
	wg.Wait()
	if len(held) != n {
		t.Fatalf("%d of %d readers got in", len(held), n)
	}
	// All of them hold the read lock together.
	for _, r := range held {
		if _, err := r.TTL(ctx); err != nil {
			t.Fatal(err)
		}
		r.Unlock(ctx)
	}
}

// testRWDeadReader: a reader that stops without unlocking frees its share
// when its own lease runs out, although another reader keeps renewing.
func testRWDeadReader(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	dead := newClient(t, rdb, WithLease(100*time.Millisecond), WithoutWatchdog())
	live := newClient(t, rdb, WithLease(150*time.Millisecond))
	renewed := make(chan struct{}, 64)
	live.wd.hookRenewed = func(string, error) { renewed <- struct{}{} }
	rd, err := dead.RWMutex("rwd").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := live.RWMutex("rwd").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, rd.Context(), 10*time.Second, "dead reader's lost signal")
	// The live reader renewed past the dead one's lease.
	for i := 0; i < 3; i++ {
		select {
		case <-renewed:
		case <-time.After(10 * time.Second):
			t.Fatal("live reader not renewed")
		}
	}
	if err := rl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := newClient(t, rdb).RWMutex("rwd").TryLock(ctx)
	if err != nil {
		t.Fatalf("writer blocked by a dead reader: %v", err)
	}
	w.Unlock(ctx)
	if err := rd.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("dead reader unlock: %v", err)
	}
}

// testRWWriterNotStarved: eight readers keep the read lock held without a
// gap (each takes its next read lock before giving up the last). A writer
// still gets the lock: readers arriving after it queue behind it.
func testRWWriterNotStarved(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	readers, writer := newClient(t, rdb), newClient(t, rdb)
	rw := readers.RWMutex("starve")
	stop := make(chan struct{})
	handoffs := make(chan struct{}, 1024)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur, err := rw.RLock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			for {
				select {
				case <-stop:
					cur.Unlock(ctx)
					return
				default:
				}
				next, err := rw.TryRLock(ctx)
				cur.Unlock(ctx)
				if err != nil {
					// Queued behind the writer: wait for a turn.
					if next, err = rw.RLock(ctx); err != nil {
						t.Error(err)
						return
					}
				}
				cur = next
				select {
				case handoffs <- struct{}{}:
				default:
				}
			}
		}()
	}
	for i := 0; i < 16; i++ { // the readers overlap
		<-handoffs
	}
	h, err := writer.RWMutex("starve").Lock(ctx)
	close(stop)
	if err != nil {
		t.Fatalf("writer starved by overlapping readers: %v", err)
	}
	h.Unlock(ctx)
	wg.Wait()
}
