package stock

import (
	"errors"

	"github.com/cacheguard/cacheguard/internal/option"
)

// Errors returned by the package; match them with errors.Is. Errors from
// Redis or the database are wrapped and returned as they are.
var (
	// ErrInvalidOption is returned by New and NewConsumer for an option that
	// makes no sense (a negative limit, zero buckets...).
	ErrInvalidOption = option.Sentinel("stock")
	// ErrInvalidArgument: an argument other than an id, a quantity or a
	// window that makes no sense (a bucket out of range, a limit <= 0, a nil
	// ledger, a group name that is empty where one is needed, too long or
	// not UTF-8).
	ErrInvalidArgument = errors.New("cacheguard: stock: invalid argument")
	// ErrInvalidSKU: an empty SKU, one longer than MaxIDLen bytes, one that
	// is not UTF-8, or one containing a brace (braces delimit the Redis
	// Cluster hash tag).
	ErrInvalidSKU = errors.New("cacheguard: stock: invalid sku")
	// ErrInvalidUser: an empty user id, one longer than MaxIDLen bytes or one
	// that is not UTF-8.
	ErrInvalidUser = errors.New("cacheguard: stock: invalid user")
	// ErrInvalidRequestID: an empty request id, one longer than MaxIDLen
	// bytes or one that is not UTF-8.
	ErrInvalidRequestID = errors.New("cacheguard: stock: invalid request id")
	// ErrInvalidQty: a quantity <= 0, above the sale's whole stock or above
	// MaxQty, or a stock that does not fit the sale.
	ErrInvalidQty = errors.New("cacheguard: stock: invalid quantity")
	// ErrInvalidWindow: a sale window that ends before it starts.
	ErrInvalidWindow = errors.New("cacheguard: stock: invalid sale window")
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
	ErrClosed = errors.New("cacheguard: stock: closed")
)

// MaxQty is the largest stock, quantity or per-user limit the package takes
// (10^12). The scripts hold quantities as Lua numbers and record them with
// cjson, which keeps 14 significant digits; staying far below that keeps
// every count exact. Larger values are answered with ErrInvalidQty (or
// ErrInvalidOption for WithPerUserLimit).
const MaxQty int64 = 1_000_000_000_000
