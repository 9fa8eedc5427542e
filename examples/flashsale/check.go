package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cacheguard/cacheguard/stock"
)

// check prints each claim of the demo with its evidence and returns how many
// failed.
func check(ctx context.Context, out io.Writer, inv *stock.Inventory, store *stock.SQLStore, cfg config,
	buyers []outcome, returned int64, c2 stock.ConsumerStats) (int, error) {
	st, err := inv.Status(ctx, sku)
	if err != nil {
		return 0, err
	}
	orders, err := store.Orders(ctx, sku)
	if err != nil {
		return 0, err
	}
	rep, err := inv.Reconcile(ctx, sku, store, "")
	if err != nil {
		return 0, err
	}
	reserved := map[string]string{} // request id -> user, as the buyers saw it
	paid := 0
	retryBad := 0
	for _, b := range buyers {
		for _, id := range b.reqs {
			reserved[id] = b.user
		}
		paid += len(b.paid)
		retryBad += b.retryBad
	}
	perUser := map[string]int64{}
	confirmed := int64(0)
	matched := 0
	for _, o := range orders {
		if o.State == stock.StateReserved || o.State == stock.StateConfirmed {
			perUser[o.User] += o.Qty
		}
		if o.State == stock.StateConfirmed {
			confirmed += o.Qty
		}
		if reserved[o.RequestID] == o.User {
			matched++
		}
	}
	overLimit := 0
	for _, n := range perUser {
		if n > 1 {
			overLimit++
		}
	}
	failed := 0
	line := func(ok bool, format string, args ...any) {
		mark := "ok  "
		if !ok {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(out, "  %s %s\n", mark, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(out, "\nchecks:\n")
	line(st.Sold == cfg.Stock && st.Remaining == 0 && st.Reserved == 0,
		"units sold = %d of %d (redis: remaining %d, held %d)", st.Sold, cfg.Stock, st.Remaining, st.Reserved)
	line(confirmed == cfg.Stock && int64(paid) == cfg.Stock, "database: %d confirmed units; buyers who paid: %d", confirmed, paid)
	line(rep.Oversold == 0 && st.Sold+st.Reserved <= cfg.Stock, "oversell %d", rep.Oversold)
	line(overLimit == 0, "users above the limit of 1: %d", overLimit)
	line(matched == len(orders) && len(orders) == len(reserved),
		"database orders %d, reservations the buyers got %d, matching %d", len(orders), len(reserved), matched)
	line(retryBad == 0, "retries with the same request id that did not get the first answer: %d", retryBad)
	line(returned > 0, "stock returned by unpaid holds and cancellations, resold: %d units", returned)
	line(c2.Claimed > 0, "consumer-2 took over %d entries left by consumer-1", c2.Claimed)
	line(rep.Clean(), "reconciliation clean (%d orphans, %d unapplied, %d pending)", len(rep.Orphans), len(rep.Unapplied), rep.Pending)
	return failed, nil
}
