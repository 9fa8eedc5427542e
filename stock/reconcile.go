package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/redis/go-redis/v9"
)

// Ledger is the database side of a sale, as Reconcile and Repair read it.
// SQLStore implements it.
type Ledger interface {
	Stock(ctx context.Context, sku string) (int64, error)
	Orders(ctx context.Context, sku string) ([]Order, error)
}

// Report is what Reconcile found. A sale whose outbox is drained and whose
// Redis and database agree has a Clean report.
type Report struct {
	SKU     string
	Redis   Status // zero when Redis holds no sale (lost, or never loaded)
	NoSale  bool   // Redis holds no sale for the SKU
	DBStock int64
	// DBActive is the units of reserved or confirmed orders in the database.
	DBActive int64
	// Oversold is how many units Redis could sell, or the database has
	// given out, beyond the stock.
	Oversold int64
	// Undersold is how many units of the stock Redis neither sells nor
	// accounts for (lost by a restart without persistence, for instance).
	Undersold int64
	// CounterDrift is Redis's reserved+sold counters minus the units its
	// reservation records hold: not 0 means the counters were tampered with.
	CounterDrift int64
	// Orphans are request ids the database knows in a state Redis does not
	// (missing in Redis, or older there).
	Orphans []string
	// Unapplied are request ids whose latest state in Redis the database has
	// not applied yet.
	Unapplied []string
	// Mismatched are request ids whose units or buyer differ between Redis
	// and the database (a hand edit, a sink that rewrote them).
	Mismatched []string
	// Pending is the outbox entries the consumer group has not acknowledged
	// (delivered or not). Unapplied ids with Pending = 0 are lost messages.
	Pending int64
}

// Clean reports whether nothing is wrong or in flight.
func (r Report) Clean() bool {
	return !r.NoSale && r.Oversold == 0 && r.Undersold == 0 && r.CounterDrift == 0 &&
		len(r.Orphans) == 0 && len(r.Unapplied) == 0 && len(r.Mismatched) == 0 && r.Pending == 0
}

func (r Report) String() string {
	return fmt.Sprintf("%s: redis %+v nosale=%v db stock=%d active=%d oversold=%d undersold=%d drift=%d orphans=%d unapplied=%d mismatched=%d pending=%d",
		r.SKU, r.Redis, r.NoSale, r.DBStock, r.DBActive, r.Oversold, r.Undersold, r.CounterDrift, len(r.Orphans), len(r.Unapplied), len(r.Mismatched), r.Pending)
}

func versionOf(s State) int {
	switch s {
	case StateReserved:
		return 1
	case StateConfirmed:
		return 2
	case StateReleased:
		return 3
	}
	return 0
}

// Reconcile compares the sale of sku in Redis with the ledger. group is the
// consumer group whose progress counts ("" for "stock"). Run it when the
// sale is quiet (or expect in-flight entries to show as Unapplied/Pending).
func (inv *Inventory) Reconcile(ctx context.Context, sku string, ledger Ledger, group string) (Report, error) {
	if err := checkSKU(sku); err != nil {
		return Report{}, err
	}
	if ledger == nil {
		return Report{}, fmt.Errorf("%w: nil ledger", ErrInvalidArgument)
	}
	group, err := groupName(group)
	if err != nil {
		return Report{}, err
	}
	rep := Report{SKU: sku}
	stock, err := ledger.Stock(ctx, sku)
	if err != nil {
		return rep, err
	}
	if stock < 0 || stock > MaxQty {
		return rep, fmt.Errorf("%w: the ledger's stock of %s is %d", ErrInvalidArgument, sku, stock)
	}
	rep.DBStock = stock
	orders, err := ledger.Orders(ctx, sku)
	if err != nil {
		return rep, err
	}
	st, err := inv.Status(ctx, sku)
	switch {
	case errors.Is(err, ErrNoSale):
		rep.NoSale = true
	case err != nil:
		return rep, err
	}
	rep.Redis = st
	recs, err := inv.records(ctx, sku, st.Buckets)
	if err != nil {
		return rep, err
	}
	if !rep.NoSale {
		rep.Pending, err = inv.pending(ctx, sku, st.Buckets, group)
		if err != nil {
			return rep, err
		}
	}
	db := map[string]Order{}
	for _, o := range orders {
		db[o.RequestID] = o
		if o.State == StateReserved || o.State == StateConfirmed {
			rep.DBActive += o.Qty
		}
	}
	var held int64
	for id, r := range recs {
		rv := versionOf(stateOf(r.S))
		if r.S != "released" {
			held += r.Q
		}
		o, ok := db[id]
		if !ok || !o.Applied || o.Version < rv {
			rep.Unapplied = append(rep.Unapplied, id)
		}
		if ok && (o.Qty != r.Q || o.User != r.U) {
			rep.Mismatched = append(rep.Mismatched, id)
		}
	}
	for id, o := range db {
		r, ok := recs[id]
		if !ok || versionOf(stateOf(r.S)) < o.Version {
			rep.Orphans = append(rep.Orphans, id)
		}
	}
	sort.Strings(rep.Unapplied)
	sort.Strings(rep.Orphans)
	sort.Strings(rep.Mismatched)
	total := st.Remaining + st.Reserved + st.Sold + st.InFlight
	rep.Oversold = max(0, total-stock, rep.DBActive-stock)
	rep.Undersold = max(0, stock-total)
	rep.CounterDrift = st.Reserved + st.Sold - held
	return rep, nil
}

// groupName is the consumer group a caller named ("stock" for "").
func groupName(group string) (string, error) {
	if group == "" {
		return "stock", nil
	}
	return group, checkID(group, ErrInvalidArgument, "group")
}

// records reads every reservation record (answers that reserved) of the sale.
func (inv *Inventory) records(ctx context.Context, sku string, n int) (map[string]record, error) {
	out := map[string]record{}
	for b := 0; b < n; b++ {
		recs, err := do(inv.calls, ctx, func(ctx context.Context) (map[string]record, error) {
			recs := map[string]record{}
			iter := inv.rdb.HScan(ctx, inv.keys(sku, b).reqs, 0, "", 500).Iterator()
			for iter.Next(ctx) {
				id := iter.Val()
				if !iter.Next(ctx) {
					break
				}
				r, err := decodeRecord(iter.Val())
				if err != nil {
					return nil, err
				}
				if r.O == "reserved" {
					recs[id] = r
				}
			}
			return recs, iter.Err()
		})
		if err != nil {
			return nil, kind.Errorf("cacheguard: stock: records of %s: %w", sku, err)
		}
		for id, r := range recs {
			out[id] = r
		}
	}
	return out, nil
}

// pending is the outbox entries not yet acknowledged by group.
func (inv *Inventory) pending(ctx context.Context, sku string, n int, group string) (int64, error) {
	var total int64
	for b := 0; b < n; b++ {
		k := inv.keys(sku, b).outbox
		p, err := do(inv.calls, ctx, func(ctx context.Context) (int64, error) { return inv.outboxPending(ctx, k, group) })
		if err != nil {
			return 0, kind.Errorf("cacheguard: stock: outbox of %s: %w", sku, err)
		}
		total += p
	}
	return total, nil
}

// outboxPending is pending for one outbox stream.
func (inv *Inventory) outboxPending(ctx context.Context, k, group string) (int64, error) {
	groups, err := inv.rdb.XInfoGroups(ctx, k).Result()
	if err != nil && !redis.HasErrorPrefix(err, "ERR no such key") {
		return 0, err
	}
	for _, g := range groups {
		if g.Name == group {
			// Entries never delivered: those after the group's last
			// delivered id (counted, rather than XINFO's lag, which
			// Redis cannot always compute and some servers misreport),
			// up to a cap that is enough to say "not drained".
			after, err := inv.rdb.XRangeN(ctx, k, "("+g.LastDeliveredID, "+", 10000).Result()
			return g.Pending + int64(len(after)), err
		}
	}
	return inv.rdb.XLen(ctx, k).Result()
}

// Repair rebuilds the sale of sku in Redis from the ledger: the stock, every
// reservation (reserved ones get a fresh hold), the per-user counts; the
// units left are spread over the buckets. Use it after Redis lost data (a
// restart without persistence) or when Reconcile found the Redis side wrong.
// It refuses with ErrNotDrained while the outbox holds entries the database
// has not applied. The sale's window and limits are w and this Inventory's
// options. Answers that reserved nothing (sold out, limit reached) are not
// in the database and so are forgotten: a retry of one is decided anew.
// Reservations must not be made while it runs.
func (inv *Inventory) Repair(ctx context.Context, sku string, ledger Ledger, w Window, group string) (Report, error) {
	start, end, err := w.millis()
	if err != nil {
		return Report{SKU: sku}, err
	}
	rep, err := inv.Reconcile(ctx, sku, ledger, group)
	if err != nil {
		return rep, err
	}
	if rep.Pending > 0 {
		return rep, fmt.Errorf("%w: %s has %d entries pending", ErrNotDrained, sku, rep.Pending)
	}
	orders, err := ledger.Orders(ctx, sku)
	if err != nil {
		return rep, err
	}
	n := inv.cfg.buckets
	type bucket struct {
		reserved, sold int64
		recs           map[string]any
		users          map[string]int64
		due            []redis.Z
	}
	bs := make([]bucket, n)
	for i := range bs {
		bs[i] = bucket{recs: map[string]any{}, users: map[string]int64{}}
	}
	now := time.Now()
	var active int64
	for _, o := range orders {
		b := &bs[homeBucket(o.User, n)]
		rec, _ := json.Marshal(record{O: "reserved", S: o.State.String(), U: o.User, Q: o.Qty, T: o.Updated.UnixMilli()})
		b.recs[o.RequestID] = string(rec)
		switch o.State {
		case StateReserved:
			b.reserved += o.Qty
			b.users[o.User] += o.Qty
			if inv.cfg.holdFor > 0 {
				b.due = append(b.due, redis.Z{Score: float64(now.Add(inv.cfg.holdFor).UnixMilli()), Member: o.RequestID})
			}
		case StateConfirmed:
			b.sold += o.Qty
			b.users[o.User] += o.Qty
		}
		if o.State == StateReserved || o.State == StateConfirmed {
			active += o.Qty
		}
	}
	left := max(0, rep.DBStock-active)
	if err := doErr(inv.calls, ctx, func(ctx context.Context) error {
		return inv.rdb.HSet(ctx, salesKey(inv.cfg.ns), sku, n).Err()
	}); err != nil {
		return rep, kind.Errorf("cacheguard: stock: repair %s: %w", sku, err)
	}
	for i, b := range bs {
		share := left / int64(n)
		if int64(i) < left%int64(n) {
			share++
		}
		k := inv.keys(sku, i)
		err := doErr(inv.calls, ctx, func(ctx context.Context) error {
			_, err := pipe.Run(ctx, inv.rdb.TxPipeline(), func(p redis.Pipeliner) error {
				p.Del(ctx, k.meta, k.reqs, k.users, k.due, k.xin)
				p.HSet(ctx, k.meta, "stock", share+b.reserved+b.sold, "start", start, "end", end, "buckets", n,
					"total", rep.DBStock, "limit", inv.cfg.perUser, "hold", inv.cfg.holdFor.Milliseconds(),
					"remaining", share, "reserved", b.reserved, "sold", b.sold, "xin", 0, "xout", 0)
				if len(b.recs) > 0 {
					p.HSet(ctx, k.reqs, b.recs)
				}
				for u, q := range b.users {
					p.HSet(ctx, k.users, u, q)
				}
				if len(b.due) > 0 {
					p.ZAdd(ctx, k.due, b.due...)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return rep, kind.Errorf("cacheguard: stock: repair %s bucket %d: %w", sku, i, err)
		}
	}
	inv.soldOut.Delete(sku)
	return rep, nil
}

// Unload ends a sale for good: it removes the SKU from the sales the
// consumers drain and deletes its keys (counters, request records, outbox,
// timers). It refuses with ErrNotDrained while the outbox holds entries the
// group has not acknowledged. Reconcile first if the database matters.
func (inv *Inventory) Unload(ctx context.Context, sku, group string) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	group, err := groupName(group)
	if err != nil {
		return err
	}
	n, err := inv.loadedBuckets(ctx, sku)
	if err != nil {
		return err
	}
	p, err := inv.pending(ctx, sku, n, group)
	if err != nil {
		return err
	}
	if p > 0 {
		return fmt.Errorf("%w: %s has %d entries pending", ErrNotDrained, sku, p)
	}
	if err := doErr(inv.calls, ctx, func(ctx context.Context) error {
		return inv.rdb.HDel(ctx, salesKey(inv.cfg.ns), sku).Err()
	}); err != nil {
		return kind.Errorf("cacheguard: stock: unload %s: %w", sku, err)
	}
	for b := 0; b < n; b++ {
		k := inv.keys(sku, b)
		if err := doErr(inv.calls, ctx, func(ctx context.Context) error {
			return inv.rdb.Del(ctx, k.list()...).Err()
		}); err != nil {
			return kind.Errorf("cacheguard: stock: unload %s bucket %d: %w", sku, b, err)
		}
	}
	inv.soldOut.Delete(sku)
	return nil
}
