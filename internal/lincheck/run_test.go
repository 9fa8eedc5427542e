package lincheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// servers is a running topology: a new client for each Cache instance, and
// one admin client per node (on which connections are killed).
type servers struct {
	client   func() redis.UniversalClient
	admins   []*redis.Client
	replicas []*redis.Client // one per replica, on which the stream is paused
}

func single(t *testing.T) servers {
	s, _ := redistest.RealSingle(t)
	return servers{client: func() redis.UniversalClient { return s.Client() }, admins: []*redis.Client{s.Client()}}
}

func cluster(t *testing.T) servers {
	cl, _ := redistest.StartCluster(t)
	var admins []*redis.Client
	for _, m := range cl.Masters {
		admins = append(admins, m.Client())
	}
	return servers{client: func() redis.UniversalClient { return cl.Client() }, admins: admins}
}

// replicated is a three-master cluster with a replica each, whose clients
// read masters and replicas at random; run makes the replicas lag.
func replicated(t *testing.T) servers {
	rc, _ := redistest.StartClusterWithReplicas(t)
	var admins, replicas []*redis.Client
	for _, m := range rc.Masters {
		admins = append(admins, m.Client())
	}
	for _, r := range rc.Replicas {
		replicas = append(replicas, r.Client())
	}
	return servers{client: func() redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), RouteRandomly: true})
		t.Cleanup(func() { c.Close() })
		return c
	}, admins: admins, replicas: replicas}
}

// workload is one random history's settings.
type workload struct {
	name      string
	instances int
	workers   int           // per instance
	local     time.Duration // local-tier TTL; 0: no local tier
	copies    time.Duration // hot-key copies' TTL, every key hot (cluster only); 0: none
	replicas  time.Duration // WithReplicaReads's bound (replicated only); 0: off
	kills     bool          // kill connections on the servers mid-run
	duration  time.Duration
	seed      uint64
}

const (
	jitter = 0.1
	nKeys  = 6
	hold   = 2 * time.Second // DeleteKeepingVersion's tombstone
)

// register reports a workload whose keys must each be a register
// (linearizable); the others are checked against their bound.
func (w workload) register() bool { return w.local == 0 && w.copies == 0 && w.replicas == 0 }

// bound is the documented staleness bound for w: with a local tier, local
// TTL × (1 + jitter), with WithLocalStale(0) (README, "Local tier and
// staleness"); with hot-key copies, their TTL (cache.WithHotKeyCopies); with
// replica reads alone 0: no read that starts after a write returned returns
// an older value (cache.WithReplicaReads), though two overlapping reads may
// see the write in either order.
func (w workload) bound() time.Duration {
	if w.copies > 0 {
		return w.copies
	}
	return time.Duration(float64(w.local) * (1 + jitter))
}

// everyKeyHot makes every key hot, so that every read may go to a copy.
type everyKeyHot struct{}

func (everyKeyHot) Record(string)     {}
func (everyKeyHot) IsHot(string) bool { return true }

func (w workload) options(prefix string) []cache.Option {
	opts := []cache.Option{cache.WithPrefix(prefix), cache.WithTTL(time.Minute),
		cache.WithJitter(jitter), cache.WithWait(time.Second),
		// Killed connections are expected here; the history records what
		// they did to each call.
		cache.WithLogger(slog.New(slog.DiscardHandler))}
	if w.replicas > 0 {
		opts = append(opts, cache.WithReplicaReads(w.replicas))
	}
	if w.copies > 0 {
		opts = append(opts, cache.WithHotKeys(everyKeyHot{}), cache.WithHotKeyCopies(2, w.copies))
	}
	if w.local > 0 {
		opts = append(opts, cache.WithLocal(1<<20), cache.WithLocalAdmitAll(),
			cache.WithLocalTTL(w.local), cache.WithLocalStale(0))
	}
	return opts
}

// run records one random history of w on srv.
func run(t *testing.T, srv servers, w workload) *history {
	prefix := fmt.Sprintf("lc:%s:%d:", w.name, w.seed)
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	d := newDB(keys)
	seeds := &lockedRand{src: rand.New(rand.NewPCG(w.seed, 0))}
	caches := make([]*cache.Cache[row], w.instances)
	for i := range caches {
		c, err := cache.New(srv.client(), cache.Values[row]{}, w.options(prefix)...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		caches[i] = c
	}

	h := newHistory()
	deadline := time.Now().Add(w.duration)
	var wg sync.WaitGroup
	for i, c := range caches {
		for j := 0; j < w.workers; j++ {
			wk := &worker{id: i*w.workers + j, inst: i, c: c, d: d, h: h, keys: keys,
				rng: seeds.get(), loads: &lockedRand{src: seeds.get()}, giveUp: deadline.Add(3 * time.Second)}
			wg.Add(1)
			go func() { defer wg.Done(); wk.loop(deadline) }()
		}
	}
	stop := make(chan struct{})
	var kw sync.WaitGroup
	if w.kills {
		kw.Add(1)
		go func() { defer kw.Done(); killConnections(srv.admins, seeds.get(), h, stop) }()
	}
	if len(srv.replicas) > 0 {
		kw.Add(1)
		go func() { defer kw.Done(); lagReplicas(srv.replicas, seeds.get(), stop) }()
	}
	wg.Wait()
	close(stop)
	kw.Wait()
	for _, c := range caches {
		s := c.Stats()
		h.stats.Hits += s.Hits
		h.stats.LocalHits += s.LocalHits
		h.stats.CopyReads += s.CopyReads
		h.stats.Loads += s.Loads
		h.stats.RejectedFills += s.RejectedFills
		h.stats.LeaseWaits += s.LeaseWaits
		h.stats.RedisErrors += s.RedisErrors
		h.stats.SubscriptionDowns += s.SubscriptionDowns
	}
	return h
}

// worker runs random operations on one instance, one at a time.
type worker struct {
	id, inst int
	c        *cache.Cache[row]
	d        *db
	h        *history
	keys     []string
	rng      *rand.Rand
	loads    *lockedRand
	giveUp   time.Time
}

func (w *worker) loop(deadline time.Time) {
	for time.Now().Before(deadline) {
		switch p := w.rng.Float64(); {
		case p < 0.5:
			w.get(w.keys[w.rng.IntN(len(w.keys))])
		case p < 0.65:
			perm := w.rng.Perm(len(w.keys))
			var ks []string
			for _, i := range perm[:2+w.rng.IntN(2)] {
				ks = append(ks, w.keys[i])
			}
			w.getMany(ks)
		default:
			w.write(w.keys[w.rng.IntN(len(w.keys))], writeKind(w.rng.IntN(4)))
		}
		time.Sleep(time.Duration(w.rng.Int64N(int64(4 * time.Millisecond))))
	}
}

// result turns what a read returned for key into the version it saw.
func (w *worker) result(key string, v row, found bool) int64 {
	switch {
	case !found && w.d.initiallyAbsent(key):
		return 0
	case !found || v.K != key:
		return impossible
	}
	return int64(v.V)
}

func (w *worker) get(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	call := w.h.now()
	v, err := w.c.Get(ctx, key, w.d.loader(w.loads))
	ret := w.h.now()
	if err != nil && !errors.Is(err, cache.ErrNotFound) {
		w.h.count(&w.h.dropped)
		return
	}
	w.h.add(op{key: key, worker: w.id, inst: w.inst, kind: "Get", ver: w.result(key, v, err == nil), call: call, ret: ret})
}

func (w *worker) getMany(keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	call := w.h.now()
	m, err := w.c.GetMany(ctx, keys, w.d.batchLoader(w.loads))
	ret := w.h.now()
	var be *cache.BatchError
	if err != nil && !errors.As(err, &be) {
		w.h.count(&w.h.dropped)
		return
	}
	for _, k := range keys {
		if be != nil && be.Err(k) != nil {
			w.h.count(&w.h.dropped)
			continue
		}
		v, found := m[k]
		w.h.add(op{key: k, worker: w.id, inst: w.inst, kind: "GetMany", ver: w.result(k, v, found), call: call, ret: ret})
	}
}

// write updates key's row, then makes the cache call of kind, retried until
// Redis takes it (or giveUp passes).
func (w *worker) write(key string, kind writeKind) {
	ver, call := w.d.begin(key, kind, w.h.now)
	defer w.d.end(key, kind)
	o := op{key: key, worker: w.id, inst: w.inst, kind: kind.String(), write: true, ver: int64(ver), call: call, ret: never}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := w.cacheCall(ctx, key, kind, ver)
		cancel()
		if err == nil {
			o.ret = w.h.now()
			break
		}
		if time.Now().After(w.giveUp) {
			w.h.count(&w.h.gaveUp)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.h.add(o)
}

func (w *worker) cacheCall(ctx context.Context, key string, kind writeKind, ver uint64) error {
	switch kind {
	case wDelete:
		return w.c.Delete(ctx, key)
	case wDeleteKeepingVersion:
		return w.c.DeleteKeepingVersion(ctx, hold, key)
	case wSetVersioned:
		_, err := w.c.SetVersioned(ctx, key, row{K: key, V: ver}, ver)
		return err
	}
	return w.c.Set(ctx, key, row{K: key, V: ver})
}

// killConnections kills a random client connection (cache, pub/sub) on a
// random node every 20–150 ms, and now and then every normal one, until stop.
func killConnections(admins []*redis.Client, rng *rand.Rand, h *history, stop <-chan struct{}) {
	nowAndThen(rng, stop, func(ctx context.Context) {
		a := admins[rng.IntN(len(admins))]
		if rng.Float64() < 0.2 {
			if n, err := a.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result(); err == nil {
				for range n {
					h.count(&h.kills)
				}
			}
		} else if ids := clientIDs(ctx, a); len(ids) > 0 {
			if a.ClientKillByFilter(ctx, "ID", ids[rng.IntN(len(ids))], "SKIPME", "yes").Err() == nil {
				h.count(&h.kills)
			}
		}
	})
}

// nowAndThen runs fault every 20 to 150 ms, with a context of a second,
// until stop.
func nowAndThen(rng *rand.Rand, stop <-chan struct{}, fault func(ctx context.Context)) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(20*time.Millisecond + time.Duration(rng.Int64N(int64(130*time.Millisecond)))):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fault(ctx)
		cancel()
	}
}

// lagReplicas makes a random replica stop applying its master's stream for
// 20 to 200 ms (CLIENT PAUSE WRITE on it; reads go on), every 20 to 150 ms,
// until stop: a replica that lags, whose old values reads find.
func lagReplicas(replicas []*redis.Client, rng *rand.Rand, stop <-chan struct{}) {
	nowAndThen(rng, stop, func(ctx context.Context) {
		replicas[rng.IntN(len(replicas))].Do(ctx, "CLIENT", "PAUSE", 20+rng.Int64N(180), "WRITE")
	})
}

// clientIDs lists the ids of a node's client connections, from CLIENT LIST.
func clientIDs(ctx context.Context, a *redis.Client) []string {
	list, err := a.ClientList(ctx).Result()
	if err != nil {
		return nil
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		if rest, ok := strings.CutPrefix(line, "id="); ok {
			id, _, _ := strings.Cut(rest, " ")
			ids = append(ids, id)
		}
	}
	return ids
}
