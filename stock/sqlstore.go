package stock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// SQLStore keeps a sale's stock and its orders in a database/sql database
// and is the Sink and Ledger the package offers out of the box. It uses only
// portable SQL with ? placeholders (SQLite, MySQL, MariaDB).
//
// Exactly once in effect: the order table's key is (sku, request_id), and
// each row keeps the highest version applied. A redelivered event finds its
// row and changes nothing; a release or confirm that arrives before its
// reservation inserts the row "parked" (reservation not applied yet), and
// the reservation, when it comes, completes it instead of overwriting it
// (the idea of a branch barrier: the later branch sees the earlier one's
// mark).
type SQLStore struct {
	db     *sql.DB
	sku    string // table names
	order  string
	err    error // a nil db or a prefix that is not a plain name
	parked atomic.Int64
	joined atomic.Int64
}

// Order is one row of the order table.
type Order struct {
	SKU       string
	RequestID string
	User      string
	Qty       int64
	State     State
	Version   int
	// Applied: the reservation itself has been applied. A row without it is
	// a release or confirm parked waiting for its reservation.
	Applied bool
	Updated time.Time
}

// NewSQLStore returns a store whose tables are named prefix+"sku" and
// prefix+"order" ("stock_" if prefix is empty). Create them with CreateTables.
// The prefix is letters, digits and underscores (it is written into the
// SQL); with another prefix or a nil db every method returns an error
// wrapping ErrInvalidOption.
func NewSQLStore(db *sql.DB, prefix string) *SQLStore {
	if prefix == "" {
		prefix = "stock_"
	}
	s := &SQLStore{db: db, sku: prefix + "sku", order: prefix + "order"}
	switch {
	case db == nil:
		s.err = fmt.Errorf("%w: nil database", ErrInvalidArgument)
	case len(prefix) > 64 || strings.TrimFunc(prefix, plainNameRune) != "":
		s.err = fmt.Errorf("%w: table prefix %q (letters, digits, underscores)", ErrInvalidArgument, prefix)
	}
	return s
}

func plainNameRune(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// usable is the store's configuration error, if any.
func (s *SQLStore) usable() error {
	if s == nil {
		return fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	return s.err
}

// CreateTables creates the store's tables if they do not exist.
func (s *SQLStore) CreateTables(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ` + s.sku + ` (
			sku VARCHAR(128) NOT NULL PRIMARY KEY,
			stock BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + s.order + ` (
			sku VARCHAR(128) NOT NULL,
			request_id VARCHAR(128) NOT NULL,
			user_id VARCHAR(128) NOT NULL,
			qty BIGINT NOT NULL,
			state VARCHAR(16) NOT NULL,
			version INT NOT NULL,
			applied INT NOT NULL,
			updated_ms BIGINT NOT NULL,
			PRIMARY KEY (sku, request_id))`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return kind.Errorf("cacheguard: stock: create tables: %w", err)
		}
	}
	return nil
}

// SetStock records the stock of sku (what Load will put on sale).
func (s *SQLStore) SetStock(ctx context.Context, sku string, qty int64) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := checkSKU(sku); err != nil {
		return err
	}
	if qty < 0 || qty > MaxQty {
		return fmt.Errorf("%w: stock %d (0 to %d)", ErrInvalidArgument, qty, MaxQty)
	}
	r, err := s.db.ExecContext(ctx, `UPDATE `+s.sku+` SET stock = ? WHERE sku = ?`, qty, sku)
	if err == nil {
		if n, _ := r.RowsAffected(); n == 0 {
			// MySQL reports 0 rows for an unchanged value too: insert only if absent.
			var x int64
			if err = s.db.QueryRowContext(ctx, `SELECT stock FROM `+s.sku+` WHERE sku = ?`, sku).Scan(&x); errors.Is(err, sql.ErrNoRows) {
				_, err = s.db.ExecContext(ctx, `INSERT INTO `+s.sku+` (sku, stock) VALUES (?, ?)`, sku, qty)
			}
		}
	}
	if err != nil {
		return kind.Errorf("cacheguard: stock: set stock %s: %w", sku, err)
	}
	return nil
}

// Stock returns the recorded stock of sku, or an error wrapping ErrNoSale.
func (s *SQLStore) Stock(ctx context.Context, sku string) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := checkSKU(sku); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT stock FROM `+s.sku+` WHERE sku = ?`, sku).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s has no stock row", ErrNoSale, sku)
	}
	if err != nil {
		return 0, kind.Errorf("cacheguard: stock: stock of %s: %w", sku, err)
	}
	return n, nil
}

// Apply writes ev to the order table; see the type's comment. An event
// that cannot be a row (an invalid id, a quantity <= 0, an op or version
// unknown) is refused with ErrPoison.
func (s *SQLStore) Apply(ctx context.Context, ev Event) error {
	if err := s.usable(); err != nil {
		return err
	}
	state, err := rowState(ev)
	if err != nil {
		return kind.Errorf("%w: %w", ErrPoison, err)
	}
	now := time.Now().UnixMilli()
	var version, applied int
	err = s.db.QueryRowContext(ctx, `SELECT version, applied FROM `+s.order+` WHERE sku = ? AND request_id = ?`,
		ev.SKU, ev.RequestID).Scan(&version, &applied)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// First news of this request. If it is not the reservation, the row
		// is parked: the reservation completes it when it arrives. (Two
		// consumers racing here: one insert fails on the key and its entry is
		// retried, finding the row.)
		appliedNow := 0
		if ev.Op == OpReserve {
			appliedNow = 1
		} else {
			s.parked.Add(1)
		}
		_, err = s.db.ExecContext(ctx, `INSERT INTO `+s.order+
			` (sku, request_id, user_id, qty, state, version, applied, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			ev.SKU, ev.RequestID, ev.User, ev.Qty, state, ev.Version, appliedNow, now)
	case err != nil:
	case ev.Op == OpReserve:
		if applied == 0 {
			_, err = s.db.ExecContext(ctx, `UPDATE `+s.order+` SET applied = 1, updated_ms = ? WHERE sku = ? AND request_id = ?`,
				now, ev.SKU, ev.RequestID)
			if err == nil {
				s.joined.Add(1)
			}
		}
	default:
		_, err = s.db.ExecContext(ctx, `UPDATE `+s.order+` SET state = ?, version = ?, updated_ms = ? WHERE sku = ? AND request_id = ? AND version < ?`,
			state, ev.Version, now, ev.SKU, ev.RequestID, ev.Version)
	}
	if err != nil {
		return kind.Errorf("cacheguard: stock: apply %s %s/%s: %w", ev.Op, ev.SKU, ev.RequestID, err)
	}
	return nil
}

// Parked counts rows waiting for their reservation since since or earlier.
func (s *SQLStore) Parked(ctx context.Context, since time.Time) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.order+` WHERE applied = 0 AND updated_ms <= ?`, since.UnixMilli()).Scan(&n)
	if err != nil {
		return 0, kind.Errorf("cacheguard: stock: parked: %w", err)
	}
	return n, nil
}

// ParkStats returns how many releases or confirms this store parked, and how
// many parked rows a late reservation completed, since NewSQLStore.
func (s *SQLStore) ParkStats() (parked, joined int64) {
	if s == nil {
		return 0, 0
	}
	return s.parked.Load(), s.joined.Load()
}

// rowState is the state column an event writes, after checking that the
// event can be a row.
func rowState(ev Event) (string, error) {
	if err := checkSKU(ev.SKU); err != nil {
		return "", err
	}
	if err := checkID(ev.RequestID, ErrInvalidArgument, "request id"); err != nil {
		return "", err
	}
	if err := checkID(ev.User, ErrInvalidArgument, "user"); err != nil {
		return "", err
	}
	if ev.Qty <= 0 || ev.Qty > MaxQty {
		return "", fmt.Errorf("%w: quantity %d", ErrInvalidArgument, ev.Qty)
	}
	var state State
	switch ev.Op {
	case OpReserve:
		state = StateReserved
	case OpConfirm:
		state = StateConfirmed
	case OpRelease, OpExpire:
		state = StateReleased
	default:
		return "", fmt.Errorf("op %q", ev.Op)
	}
	if ev.Version != ev.Op.version() {
		return "", fmt.Errorf("%s with version %d", ev.Op, ev.Version)
	}
	return state.String(), nil
}

// Orders returns every order row of sku.
func (s *SQLStore) Orders(ctx context.Context, sku string) ([]Order, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if err := checkSKU(sku); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT request_id, user_id, qty, state, version, applied, updated_ms FROM `+s.order+` WHERE sku = ?`, sku)
	if err != nil {
		return nil, kind.Errorf("cacheguard: stock: orders of %s: %w", sku, err)
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		o := Order{SKU: sku}
		var st string
		var applied int
		var ms int64
		if err := rows.Scan(&o.RequestID, &o.User, &o.Qty, &st, &o.Version, &applied, &ms); err != nil {
			return nil, kind.Errorf("cacheguard: stock: orders of %s: %w", sku, err)
		}
		o.State, o.Applied, o.Updated = stateOf(st), applied == 1, time.UnixMilli(ms)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, kind.Errorf("cacheguard: stock: orders of %s: %w", sku, err)
	}
	return out, nil
}
