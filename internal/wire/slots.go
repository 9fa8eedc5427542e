package wire

import (
	"strconv"
	"strings"
	"sync"
)

// Redis Cluster hash slots, for the keys a feature must place on a slot of
// its choice (a hot key's copies, the replication barrier beside a key).

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot is the hash slot of key, as Redis Cluster computes it: CRC16 (XMODEM)
// of the key's hash tag (the part between the first "{" and the next "}",
// when not empty), else of the whole key, modulo Slots.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// SlotTag is a hash tag whose slot is slot (0 ≤ slot < Slots): a key
// containing "{" + SlotTag(slot) + "}", and no brace before it, lives on it.
// The tags are the shortest decimal numbers that reach each slot, found once
// per process.
func SlotTag(slot int) string { return slotTags()[slot] }

var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, Slots)
	for n, left := 0, Slots; left > 0; n++ {
		tag := strconv.Itoa(n)
		if s := Slot(tag); tags[s] == "" {
			tags[s] = tag
			left--
		}
	}
	return tags
})
