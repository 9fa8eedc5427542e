package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// Inventory sells the stock of SKUs loaded into Redis. It is safe for
// concurrent use and holds no goroutine: create as many as convenient.
type Inventory struct {
	rdb    redis.UniversalClient
	calls  call.Bound // how calls on rdb are bounded by their context
	cfg    config
	report option.Reporter

	soldOut sync.Map // sku -> time.Time until which the SKU is known sold out or ended

	hooks hooks
	// moveWait overrides the package's moveWait (tests on a loaded machine).
	moveWait time.Duration
}

// hooks are interleaving points for tests; nil in production.
type hooks struct {
	// afterBorrow runs after stock was taken from another bucket and before
	// it is credited to the home bucket (a crash there leaves it in flight).
	afterBorrow func(sku string, to int) error
}

// Window is when a sale accepts reservations: from Start (zero: at once) until
// End (zero: no end), by the Redis server's clock.
type Window struct {
	Start, End time.Time
}

// millis is the window in Unix milliseconds as the scripts keep it (0: no
// bound), or ErrInvalidArgument.
func (w Window) millis() (start, end int64, err error) {
	if !w.End.IsZero() && !w.End.After(w.Start) {
		return 0, 0, fmt.Errorf("%w: sale window ends %v, before it starts %v", ErrInvalidArgument, w.End, w.Start)
	}
	if !w.Start.IsZero() {
		start = w.Start.UnixMilli()
	}
	if !w.End.IsZero() {
		end = w.End.UnixMilli()
	}
	return start, end, nil
}

// New returns an Inventory working on rdb (any redis.UniversalClient).
func New(rdb redis.UniversalClient, opts ...Option) (*Inventory, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	o, err := apply(inventoryPart, opts)
	if err != nil {
		return nil, err
	}
	return &Inventory{rdb: rdb, calls: call.For(rdb).RedisAs(ErrRedis), cfg: o.inv, report: o.report}, nil
}

func (inv *Inventory) keys(sku string, b int) bucketKeys { return keysFor(inv.cfg.ns, sku, b) }

// Buckets is the bucket count this Inventory was configured with.
func (inv *Inventory) Buckets() int { return inv.cfg.buckets }

var loadScript = redis.NewScript(`
local m = KEYS[1]
local f = {'stock','start','end','buckets','total','limit','hold'}
if redis.call('EXISTS', m) == 1 then
  local c = redis.call('HMGET', m, unpack(f))
  for i = 1, #f do
    if c[i] ~= ARGV[i] then return 0 end
  end
  return 1
end
for i = 1, #f do redis.call('HSET', m, f[i], ARGV[i]) end
redis.call('HSET', m, 'remaining', ARGV[1], 'reserved', 0, 'sold', 0, 'xin', 0, 'xout', 0)
return 1
`)

// Load puts a sale of qty units of sku on, open during w; qty is normally the
// database's stock (see SQLStore.Stock). A stock of 0 is a sale whose buyers
// are answered SoldOut. The units are split evenly over the
// buckets. Loading the same sale again is a no-op (so a Load cut short can
// be repeated); loading a different one over it returns ErrSaleExists.
func (inv *Inventory) Load(ctx context.Context, sku string, qty int64, w Window) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	n := int64(inv.cfg.buckets)
	if qty < 0 || qty > MaxQty {
		return fmt.Errorf("%w: stock %d (0 to %d)", ErrInvalidArgument, qty, MaxQty)
	}
	start, end, err := w.millis()
	if err != nil {
		return err
	}
	// Registered first, so that a consumer drains whatever this sale writes;
	// a sale registered with another bucket count is refused untouched.
	fresh, err := inv.register(ctx, sku, n)
	if err != nil {
		return err
	}
	for b := int64(0); b < n; b++ {
		share := qty / n
		if b < qty%n {
			share++
		}
		k := inv.keys(sku, int(b))
		ok, err := do(inv.calls, ctx, func(ctx context.Context) (int, error) {
			return loadScript.Run(ctx, inv.rdb, []string{k.meta},
				share, start, end, n, qty, inv.cfg.perUser, inv.cfg.holdFor.Milliseconds()).Int()
		})
		if err != nil {
			return kind.Errorf("cacheguard: stock: load %s: %w", sku, err)
		}
		if ok == 0 {
			err := fmt.Errorf("%w: %s", ErrSaleExists, sku)
			if fresh {
				// Keys left by an unfinished Unload: the registration this
				// call made is taken back, so the refusal changes nothing.
				if derr := doErr(inv.calls, context.WithoutCancel(ctx), func(ctx context.Context) error {
					return inv.rdb.HDel(ctx, salesKey(inv.cfg.ns), sku).Err()
				}); derr != nil {
					err = errors.Join(err, kind.Errorf("cacheguard: stock: load %s: unregister: %w", sku, derr))
				}
			}
			return err
		}
	}
	inv.soldOut.Delete(sku)
	return nil
}

// Status is a sale's state in Redis, summed over its buckets. Remaining +
// Reserved + Sold + InFlight is the sale's stock, unless something is wrong
// (Reconcile says what).
type Status struct {
	Stock     int64 // units loaded (after a Repair: as rebuilt)
	Remaining int64 // units for sale now
	Reserved  int64 // units held by reservations not yet confirmed
	Sold      int64 // units confirmed
	InFlight  int64 // units being moved between buckets
	Start     time.Time
	End       time.Time // zero: no end
	Buckets   int
}

// Status reads the sale's counters. It returns ErrNoSale if sku is not loaded.
func (inv *Inventory) Status(ctx context.Context, sku string) (Status, error) {
	if err := checkSKU(sku); err != nil {
		return Status{}, err
	}
	n, err := inv.loadedBuckets(ctx, sku)
	if err != nil {
		return Status{}, err
	}
	cmds, err := do(inv.calls, ctx, func(ctx context.Context) ([]*redis.SliceCmd, error) {
		cmds := make([]*redis.SliceCmd, n)
		_, err := pipe.Run(ctx, inv.rdb.Pipeline(), func(p redis.Pipeliner) error {
			for b := 0; b < n; b++ {
				cmds[b] = p.HMGet(ctx, inv.keys(sku, b).meta, "stock", "remaining", "reserved", "sold", "xin", "xout", "start", "end")
			}
			return nil
		})
		return cmds, err
	})
	if err != nil {
		return Status{}, kind.Errorf("cacheguard: stock: status %s: %w", sku, err)
	}
	st := Status{Buckets: n}
	var xin, xout int64
	for b, c := range cmds {
		v := c.Val()
		if v[0] == nil {
			return Status{}, fmt.Errorf("%w: %s bucket %d", ErrNoSale, sku, b)
		}
		num := func(i int) int64 { s, _ := v[i].(string); x, _ := strconv.ParseInt(s, 10, 64); return x }
		st.Stock += num(0)
		st.Remaining += num(1)
		st.Reserved += num(2)
		st.Sold += num(3)
		xin += num(4)
		xout += num(5)
		if b == 0 {
			if s := num(6); s > 0 {
				st.Start = time.UnixMilli(s)
			}
			if e := num(7); e > 0 {
				st.End = time.UnixMilli(e)
			}
		}
	}
	st.InFlight = xout - xin
	return st, nil
}
