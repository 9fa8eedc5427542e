package cache

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Random Gets, GetManys, Sets and Deletes on a few keys: a read that starts
// after a write returned never answers an older version; Stats add up.
func TestReadsNeverGoBackAfterWrite(t *testing.T) {
	for local, name := range []string{"no local tier", "default store", "locked map store", "ristretto store"} {
		t.Run(name, func(t *testing.T) {
			onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := context.Background()
				var c *Cache[int]
				store := &mapStore[int]{}
				switch local {
				case 1:
					c = newCache[int](t, rdb, WithLocal(1<<20), WithLocalAdmitAll())
					<-c.bus.Subscribed()
				case 2:
					c = newCacheWith(t, rdb, Values[int]{LocalStore: store}, WithLocalAdmitAll())
					<-c.bus.Subscribed()
				case 3:
					c = newCache[int](t, rdb, WithLocalRistretto(1<<20), WithLocalAdmitAll())
					<-c.bus.Subscribed()
				default:
					c = newCache[int](t, rdb)
				}
				const nk = 3
				c.Delete(ctx, "k0", "k1", "k2")
				var db, floor [nk]atomic.Int64
				var mu [nk]sync.Mutex
				load := func(_ context.Context, k string) (int, error) {
					var i int
					fmt.Sscan(k[1:], &i)
					return int(db[i].Load()), nil
				}
				bload := func(ctx context.Context, ks []string) (map[string]int, error) {
					out := map[string]int{}
					for _, k := range ks {
						out[k], _ = load(ctx, k)
					}
					return out, nil
				}
				var calls atomic.Uint64
				var wg sync.WaitGroup
				errs := make(chan error, 100)
				for g := 0; g < 6; g++ {
					wg.Add(1)
					go func(seed int64) {
						defer wg.Done()
						rnd := rand.New(rand.NewSource(seed))
						for n := 0; n < 300; n++ {
							i := rnd.Intn(nk)
							k := fmt.Sprint("k", i)
							switch op := rnd.Intn(10); {
							case op < 2:
								mu[i].Lock()
								v := db[i].Add(1)
								var err error
								if op == 0 {
									err = c.Set(ctx, k, int(v))
								} else {
									err = c.Delete(ctx, k)
								}
								floor[i].Store(v)
								mu[i].Unlock()
								if err != nil {
									errs <- err
									return
								}
							case op < 6:
								f := floor[i].Load()
								v, err := c.Get(ctx, k, load)
								calls.Add(1)
								if err != nil || int64(v) < f {
									errs <- fmt.Errorf("Get %s = %d, %v after write of %d", k, v, err, f)
									return
								}
							default:
								j := rnd.Intn(nk)
								k2 := fmt.Sprint("k", j)
								f1, f2 := floor[i].Load(), floor[j].Load()
								out, err := c.GetMany(ctx, []string{k, k2}, bload)
								if i == j {
									calls.Add(1)
								} else {
									calls.Add(2)
								}
								if err != nil || int64(out[k]) < f1 || int64(out[k2]) < f2 {
									errs <- fmt.Errorf("GetMany %s,%s = %v, %v after writes %d,%d", k, k2, out, err, f1, f2)
									return
								}
							}
						}
					}(int64(g) + time.Now().UnixNano())
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				if t.Failed() && local == 2 {
					store.mu.Lock()
					l := store.log
					if len(l) > 60 {
						l = l[len(l)-60:]
					}
					t.Logf("store log tail: %v", l)
					store.mu.Unlock()
				}
				if s := c.Stats(); answeredCalls(s) != calls.Load() {
					t.Errorf("hits+misses+nullhits = %d for %d calls (%+v)", answeredCalls(s), calls.Load(), s)
				}
				checkFlightsIdle(t, c)
			})
		})
	}
}

// mapStore is a plain locked map LocalStore that logs what it does.
type mapStore[V any] struct {
	mu     sync.Mutex
	m      map[string]*LocalEntry[V]
	log    []string
	closed atomic.Int32
}

func (s *mapStore[V]) Get(key string) (*LocalEntry[V], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	return e, ok
}
func (s *mapStore[V]) Set(key string, e *LocalEntry[V], _ int64, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*LocalEntry[V]{}
	}
	s.m[key] = e
	s.log = append(s.log, fmt.Sprintf("set %s=%v", key, e.Value))
}
func (s *mapStore[V]) Del(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	s.log = append(s.log, "del "+key)
}
func (s *mapStore[V]) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.m)
	s.log = append(s.log, "clear")
}
func (s *mapStore[V]) Close() { s.closed.Add(1) }
