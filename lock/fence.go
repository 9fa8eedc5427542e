package lock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// The resource side of fencing. A lock alone cannot stop a holder that was
// paused past its lease from writing; the resource can, if every write
// carries the holder's token and the resource refuses a token that is not
// larger than the last one it accepted. These helpers do that check for a
// SQL row and for a value kept in Redis.

// ErrFenced is returned when a resource refused a write because it has
// already accepted one with a larger (or the same) fencing token: a newer
// holder of the lock got there first, and this holder must stop.
var ErrFenced = errors.New("cacheguard: lock: write refused by the fencing token")

// Execer is what ExecFenced needs of a *sql.DB, *sql.Tx or *sql.Conn.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ExecFenced runs an UPDATE (or INSERT ... ON CONFLICT DO UPDATE) whose
// condition admits the write only when the row's fence column is below the
// token, and which stores the token in that column, for example
//
//	UPDATE orders SET status = ?, fence = ? WHERE id = ? AND fence < ?
//
// with the token passed (by the caller, among args) for both fence
// placeholders. It returns ErrFenced when no row was changed: the row
// already carries a token at least as large, written by a newer holder (or
// the row does not exist). Store tokens in a 64-bit integer column.
func ExecFenced(ctx context.Context, db Execer, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return kind.Errorf("cacheguard: lock: fenced write: rows affected: %w", err)
	}
	if n == 0 {
		return ErrFenced
	}
	return nil
}

// fencedSetScript stores ARGV[2] in field "value" of the hash KEYS[1] if
// ARGV[1] is larger than its field "fence", then keeps the token there.
// ARGV[3] > 0 sets the key's time to live in ms. Replies 1 when written, 0
// when refused.
var fencedSetScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'fence', ARGV[1])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
`)

// SetFenced writes value to a resource kept in Redis under key, a hash with
// fields "value" and "fence", if token is larger than the fence stored with
// it, in one atomic step; otherwise it returns ErrFenced and changes
// nothing. A ttl above zero sets the key's time to live. Read the value
// with HGET key value. On a cluster the key may live in any slot; give it
// the lock's hash tag (see Client.Mutex) to keep both on one node.
func SetFenced(ctx context.Context, rdb redis.Scripter, key string, token int64, value any, ttl time.Duration) error {
	n, err := fencedSetScript.Run(ctx, rdb, []string{key}, token, value, ms(ttl)).Int64()
	if err != nil {
		return kind.RedisErr(ctx, ErrRedis, fmt.Sprintf("fenced set %q", key), err)
	}
	if n == 0 {
		return ErrFenced
	}
	return nil
}
