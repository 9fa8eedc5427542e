package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	_ "modernc.org/sqlite"
)

// errOverloaded is returned by a query that found every connection busy for
// longer than the database's queue wait: the database refused it.
var errOverloaded = errors.New("database overloaded: no free connection")

// Item is a row of the simulated database and the value being cached.
type Item struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Price int64  `json:"price"`
}

// database is a real SQL database (an in-memory SQLite) made to behave like a
// remote one under load: every query holds one of a few connections for a
// fixed latency, and a query that cannot get a connection within the queue
// wait is refused. Every query is counted on the current meter.
type database struct {
	db      *sql.DB
	rows    int
	latency time.Duration
	wait    time.Duration
	conns   chan struct{} // a token per connection in use

	meter atomic.Pointer[meter] // nil between runs: set-up queries are not counted
}

// dbNames makes each database's in-memory name unique within the process.
var dbNames atomic.Int64

// openDatabase creates the items table with ids 1..rows.
func openDatabase(ctx context.Context, rows, conns int, latency, wait time.Duration) (*database, error) {
	if rows < 1 || conns < 1 {
		return nil, fmt.Errorf("database needs at least one row and one connection (rows %d, conns %d)", rows, conns)
	}
	name := fmt.Sprintf("file:storm%d?mode=memory&cache=shared", dbNames.Add(1))
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return nil, err
	}
	// An in-memory database lives as long as one connection to it: keep
	// one open for the database's whole life.
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	d := &database{db: db, rows: rows, latency: latency, wait: wait, conns: make(chan struct{}, conns)}
	if err := d.populate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func (d *database) populate(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO items (id, name, price) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := 1; i <= d.rows; i++ {
		if _, err := stmt.ExecContext(ctx, i, fmt.Sprintf("item-%d", i), 100+i%900); err != nil {
			return fmt.Errorf("insert row %d: %w", i, err)
		}
	}
	return tx.Commit()
}

func (d *database) Close() error { return d.db.Close() }

// setMeter makes subsequent queries count on m (nil: stop counting).
func (d *database) setMeter(m *meter) { d.meter.Store(m) }

// find is one point query through a connection of the pool. The loaders of
// both the naive cache and cacheguard end here. extra is added to the
// query's latency (an expensive query).
func (d *database) find(ctx context.Context, key string, extra time.Duration) (Item, error) {
	id, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		return Item{}, fmt.Errorf("item %q: %w", key, cache.ErrNotFound)
	}
	m := d.meter.Load()
	sent := time.Now()
	if m != nil {
		m.sent()
	}
	if err := d.acquire(ctx); err != nil {
		if m != nil && errors.Is(err, errOverloaded) {
			m.refuse(sent)
		}
		return Item{}, err
	}
	defer func() { <-d.conns }()
	if err := sleep(ctx, d.latency+extra); err != nil {
		return Item{}, err
	}
	var it Item
	err = d.db.QueryRowContext(ctx, `SELECT id, name, price FROM items WHERE id = ?`, id).Scan(&it.ID, &it.Name, &it.Price)
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("item %d: %w", id, cache.ErrNotFound)
	}
	if err != nil {
		return Item{}, fmt.Errorf("item %d: %w", id, err)
	}
	if m != nil {
		m.loaded()
	}
	return it, nil
}

// acquire takes a connection, waiting at most the queue wait for one.
func (d *database) acquire(ctx context.Context) error {
	select {
	case d.conns <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(d.wait)
	defer t.Stop()
	select {
	case d.conns <- struct{}{}:
		return nil
	case <-t.C:
		return errOverloaded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// capacityPer returns how many queries the database can run in d.
func (d *database) capacityPer(span time.Duration) float64 {
	if d.latency <= 0 {
		return 0
	}
	return float64(cap(d.conns)) * float64(span) / float64(d.latency)
}

// ids lists every id in the table, for the Bloom filter's warm-up.
func (d *database) ids(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		rows, err := d.db.QueryContext(ctx, `SELECT id FROM items`)
		if err != nil {
			yield("", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				yield("", err)
				return
			}
			if !yield(strconv.FormatInt(id, 10), nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield("", err)
		}
	}
}

// all returns every row, for warming a cache up without counting queries.
func (d *database) all(ctx context.Context, limit int) ([]Item, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, name, price FROM items ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.ID, &it.Name, &it.Price); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
