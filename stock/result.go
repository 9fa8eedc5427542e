package stock

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Outcome is the answer to a reservation request.
type Outcome uint8

const (
	// Reserved: units were deducted and the reservation is in the outbox.
	Reserved Outcome = iota + 1
	// SoldOut: not enough units left in the whole sale.
	SoldOut
	// LimitReached: the user would hold more than the per-user limit.
	LimitReached
	// NotOnSale: no sale is loaded, or it has not started, or it has ended.
	NotOnSale
)

func (o Outcome) String() string {
	switch o {
	case Reserved:
		return "reserved"
	case SoldOut:
		return "sold out"
	case LimitReached:
		return "limit reached"
	case NotOnSale:
		return "not on sale"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// State is where a reservation is in its life.
type State uint8

const (
	StateNone      State = iota // the request reserved nothing
	StateReserved               // held, waiting for Confirm (or expiry)
	StateConfirmed              // paid: the units are sold
	StateReleased               // returned to the sale (Release or expiry)
)

func (s State) String() string {
	switch s {
	case StateReserved:
		return "reserved"
	case StateConfirmed:
		return "confirmed"
	case StateReleased:
		return "released"
	}
	return "none"
}

func stateOf(s string) State {
	switch s {
	case "reserved":
		return StateReserved
	case "confirmed":
		return StateConfirmed
	case "released":
		return StateReleased
	}
	return StateNone
}

// Result answers Reserve.
type Result struct {
	Outcome Outcome
	// Duplicate: the request id was answered before; Outcome, User, Qty and
	// At are that first answer, and nothing was deducted this time.
	Duplicate bool
	// State is where the reservation is now (for Reserved outcomes).
	State State
	User  string
	Qty   int64
	At    time.Time // when the first answer was given, by the Redis clock
	// Local: answered from this process's sold-out memory, without Redis;
	// such answers are not recorded against the request id.
	Local bool
	// Opens is the sale's start, for a NotOnSale answer before it.
	Opens time.Time
	// Bucket holds the reservation (the user's home bucket).
	Bucket int
}

// record is an answer as stored under its request id, in Lua's cjson.
type record struct {
	O string `json:"o"` // reserved | soldout | limit
	S string `json:"s"` // reserved | confirmed | released, for o = reserved
	U string `json:"u"`
	Q int64  `json:"q"`
	T int64  `json:"t"` // ms, Redis clock
}

func decodeRecord(s string) (record, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, kind.Errorf("cacheguard: stock: foreign request record %q: %w", s, err)
	}
	return r, nil
}

func (r record) result(b int, dup bool) Result {
	res := Result{Duplicate: dup, User: r.U, Qty: r.Q, At: time.UnixMilli(r.T), Bucket: b}
	switch r.O {
	case "reserved":
		res.Outcome, res.State = Reserved, stateOf(r.S)
	case "soldout":
		res.Outcome = SoldOut
	case "limit":
		res.Outcome = LimitReached
	}
	return res
}
