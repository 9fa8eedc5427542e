package stock

import (
	"errors"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Errors returned by the package; match them with errors.Is. Errors from
// Redis wrap ErrRedis; the database's are wrapped and returned as they are.
var (
	// ErrInvalidOption is returned by New and NewConsumer for an option that
	// makes no sense (a negative limit, zero buckets...).
	ErrInvalidOption = kind.InvalidOption("stock")
	// ErrInvalidArgument: an argument that makes no sense, the error says
	// which: an id (SKU, user, request id) that is empty, longer than
	// MaxIDLen bytes or not UTF-8, a SKU containing a brace (braces delimit
	// the Redis Cluster hash tag), a quantity <= 0, above the sale's whole
	// stock or above MaxQty, a sale window that ends before it starts, a
	// bucket out of range, a limit <= 0, a nil client or ledger.
	ErrInvalidArgument = kind.InvalidArgument("stock")
	// ErrRedis wraps the error of a Redis call that failed (the end of the
	// caller's own context comes back as it is).
	ErrRedis = kind.Redis("stock")
	// ErrSaleExists: Load found a different sale already loaded for the SKU.
	ErrSaleExists = errors.New("cacheguard: stock: a different sale is already loaded")
	// ErrNoSale: the SKU has no sale loaded in Redis.
	ErrNoSale = errors.New("cacheguard: stock: no sale loaded")
	// ErrBucketsMismatch: the client's WithBuckets differs from the loaded sale's.
	ErrBucketsMismatch = errors.New("cacheguard: stock: bucket count differs from the loaded sale")
	// ErrUnknownRequest: Confirm or Release named a request id that never
	// reserved anything for the SKU.
	ErrUnknownRequest = errors.New("cacheguard: stock: unknown request id")
	// ErrNotReserved: Confirm or Release named a request that was answered
	// without a reservation (sold out, limit reached).
	ErrNotReserved = errors.New("cacheguard: stock: request holds no reservation")
	// ErrReleased: Confirm came after the reservation was released or expired.
	ErrReleased = errors.New("cacheguard: stock: reservation already released")
	// ErrRateLimited is returned by Admission when a request is over a limit.
	ErrRateLimited = errors.New("cacheguard: stock: rate limited")
	// ErrPoison, wrapped by a Sink's error, says a message can never be
	// applied: the consumer moves it to the dead-letter stream at once.
	ErrPoison = errors.New("cacheguard: stock: poison message")
	// ErrNotDrained: Repair refused because the outbox still holds messages
	// the database has not applied; repairing then would lose them.
	ErrNotDrained = errors.New("cacheguard: stock: outbox not drained")
	// ErrClosed: the consumer was closed.
	ErrClosed = kind.Closed("stock")
)

// MaxQty is the largest stock, quantity or per-user limit the package takes
// (10^12). The scripts hold quantities as Lua numbers and record them with
// cjson, which keeps 14 significant digits; staying far below that keeps
// every count exact. Larger values are answered with ErrInvalidQty (or
// ErrInvalidOption for WithPerUserLimit).
const MaxQty int64 = 1_000_000_000_000
