package binlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Position is a place in the server's binlog: a file and an offset in it.
type Position struct {
	File   string `json:"file"`
	Offset uint32 `json:"offset"`
}

func (p Position) String() string { return fmt.Sprintf("%s:%d", p.File, p.Offset) }

// PositionStore keeps the position the Source has carried out every change
// before. Load reports false when nothing is stored yet.
type PositionStore interface {
	Load(ctx context.Context) (Position, bool, error)
	Save(ctx context.Context, p Position) error
}

// ErrCorruptPosition is matched by Run's error when the stored position
// cannot be read.
var ErrCorruptPosition = errors.New("cacheguard: binlog: corrupt position")

// RedisPositions stores the position as JSON under key, with the lease of
// the fleet's tailer beside it (lease.go): the Sources of one service's
// instances share one key, and one of them tails at a time. Give every
// other Source (another database, another set of rules) its own key.
func RedisPositions(rdb redis.UniversalClient, key string) PositionStore {
	return redisPositions{rdb: rdb, key: key}
}

type redisPositions struct {
	rdb redis.UniversalClient
	key string
}

func (r redisPositions) Load(ctx context.Context) (Position, bool, error) {
	var p Position
	b, err := r.rdb.Get(ctx, r.key).Bytes()
	if errors.Is(err, redis.Nil) {
		return p, false, nil
	}
	if err != nil {
		return p, false, kind.RedisErr(ctx, ErrRedis, "load position", err)
	}
	// The value may hold the tailer's lease alone (lease.go): no position
	// saved yet.
	v, ok := wire.ParseBinlogPosition(b)
	if !ok {
		return p, false, fmt.Errorf("%w %q under %s", ErrCorruptPosition, b, r.key)
	}
	if v.File == "" {
		return p, false, nil
	}
	return Position{File: v.File, Offset: v.Offset}, true, nil
}

func (r redisPositions) Save(ctx context.Context, p Position) error {
	b := wire.FormatBinlogPosition(p.File, p.Offset)
	if err := r.rdb.Set(ctx, r.key, b, 0).Err(); err != nil {
		return kind.RedisErr(ctx, ErrRedis, fmt.Sprintf("save position %v", p), err)
	}
	return nil
}
