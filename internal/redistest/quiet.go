package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// MainQuiet is Main for the packages whose tests kill, freeze or cut off
// servers: go-redis's own log, which would print every failed dial and
// read, is silenced first.
func MainQuiet(m *testing.M) {
	redis.SetLogger(silent{})
	Main(m)
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}
