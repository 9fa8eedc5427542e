package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Binlog positions. A binlog Source's RedisPositions key (a name the user
// gives) holds one JSON object: the position the Source has carried out
// every change before, and beside it the lease of the fleet's tailer, whose
// expiry is in ms by the Redis server's clock:
//
//	{"file":"bin.000042","offset":1234,"tailer":"<token>","until":1764000030000}
//
// file and offset are absent until a position is saved, tailer and until
// while no instance holds the lease. The lease's scripts (consistency/binlog)
// build their Lua from these names.
const (
	BinlogFile   = "file"
	BinlogOffset = "offset"
	BinlogTailer = "tailer"
	BinlogUntil  = "until"
)

// BinlogPosition is a RedisPositions value read by ParseBinlogPosition.
type BinlogPosition struct {
	File    string // "" until a position is saved
	Offset  uint32
	Tailer  string // "" while no instance holds the lease
	UntilMS int64  // the lease's expiry, ms by the Redis server's clock
}

// FormatBinlogPosition is the value of a position saved without a lease.
func FormatBinlogPosition(file string, offset uint32) []byte {
	f, _ := json.Marshal(file)
	b := append([]byte(`{"`+BinlogFile+`":`), f...)
	b = append(b, `,"`+BinlogOffset+`":`...)
	return append(strconv.AppendUint(b, uint64(offset), 10), '}')
}

// ParseBinlogPosition reads a RedisPositions value: a JSON object whose
// known fields have their types (others are ignored), with a non-empty file
// when it has one. ok is false for anything else.
func ParseBinlogPosition(v []byte) (p BinlogPosition, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return p, false
	}
	if raw, has := m[BinlogFile]; has && (json.Unmarshal(raw, &p.File) != nil || p.File == "") {
		return p, false
	}
	if raw, has := m[BinlogOffset]; has && json.Unmarshal(raw, &p.Offset) != nil {
		return p, false
	}
	if raw, has := m[BinlogTailer]; has && json.Unmarshal(raw, &p.Tailer) != nil {
		return p, false
	}
	if raw, has := m[BinlogUntil]; has {
		var ms float64 // cjson may write a number as 1.764e+12
		if json.Unmarshal(raw, &ms) != nil {
			return p, false
		}
		p.UntilMS = int64(ms)
	}
	return p, true
}

// BinlogCandidate tells whether the first bytes of a string value may be a
// RedisPositions value (inspect then reads the whole of it): a JSON object
// whose first field is one of the names above, in whichever order cjson
// wrote them.
func BinlogCandidate(head []byte) bool {
	for _, f := range []string{BinlogFile, BinlogOffset, BinlogTailer, BinlogUntil} {
		if bytes.HasPrefix(head, []byte(`{"`+f+`":`)) {
			return true
		}
	}
	return false
}
