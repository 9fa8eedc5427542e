package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Op is the kind of change an outbox entry carries.
type Op string

const (
	OpReserve Op = "reserve" // units were reserved (version 1)
	OpConfirm Op = "confirm" // the reservation was paid (version 2)
	OpRelease Op = "release" // the units went back to the sale (version 3)
	OpExpire  Op = "expire"  // the hold ran out; the units went back (version 3)
	opXfer    Op = "xfer"    // units moved between buckets; handled by the consumer
)

// version is the Version events of op carry (0 for a transfer).
func (o Op) version() int {
	switch o {
	case OpReserve:
		return 1
	case OpConfirm:
		return 2
	case OpRelease, OpExpire:
		return 3
	}
	return 0
}

// Event is one outbox entry, as handed to a Sink. Within one request id the
// Version grows with each change, so a sink that keeps the highest version
// per request id applies redelivered or reordered events correctly.
type Event struct {
	SKU       string
	Bucket    int
	MessageID string // the stream entry id
	Op        Op
	RequestID string
	User      string
	Qty       int64
	Version   int
	At        time.Time // by the Redis clock

	to int // destination bucket of a transfer
}

// Sink applies outbox events to the database. Apply must be idempotent per
// (SKU, RequestID, Version): the consumer delivers at least once. An error
// wrapping ErrPoison sends the event to the dead-letter stream at once; any
// other error leaves it pending, to be retried.
type Sink interface {
	Apply(ctx context.Context, ev Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, ev Event) error

// Apply calls f.
func (f SinkFunc) Apply(ctx context.Context, ev Event) error { return f(ctx, ev) }

func parseEvent(sku string, b int, m redis.XMessage) (Event, error) {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	num := func(k string) (int64, error) { return strconv.ParseInt(str(k), 10, 64) }
	ev := Event{SKU: sku, Bucket: b, MessageID: m.ID, Op: Op(str("op")), RequestID: str("req"), User: str("user")}
	qty, err := num("qty")
	if err != nil || qty <= 0 {
		return ev, fmt.Errorf("%w: %s: quantity %q", ErrPoison, m.ID, str("qty"))
	}
	ev.Qty = qty
	v, err := num("v")
	if err != nil {
		return ev, fmt.Errorf("%w: %s: version %q", ErrPoison, m.ID, str("v"))
	}
	ev.Version = int(v)
	at, err := num("at")
	if err != nil {
		return ev, fmt.Errorf("%w: %s: time %q", ErrPoison, m.ID, str("at"))
	}
	ev.At = time.UnixMilli(at)
	if ev.RequestID == "" || len(ev.RequestID) > MaxIDLen {
		return ev, fmt.Errorf("%w: %s: request id %q", ErrPoison, m.ID, ev.RequestID)
	}
	switch ev.Op {
	case OpReserve, OpConfirm, OpRelease, OpExpire:
		if ev.User == "" || len(ev.User) > MaxIDLen {
			return ev, fmt.Errorf("%w: %s: user %q", ErrPoison, m.ID, ev.User)
		}
		if ev.Version != ev.Op.version() {
			return ev, fmt.Errorf("%w: %s: %s with version %d", ErrPoison, m.ID, ev.Op, ev.Version)
		}
	case opXfer:
		to, err := num("to")
		if err != nil || to < 0 {
			return ev, fmt.Errorf("%w: %s: transfer to %q", ErrPoison, m.ID, str("to"))
		}
		ev.to = int(to)
	default:
		return ev, fmt.Errorf("%w: %s: op %q", ErrPoison, m.ID, ev.Op)
	}
	return ev, nil
}
