package local

import "sync"

// admitLocks is a small set of mutexes striped by key.
type admitLocks struct {
	stripes [admitStripes]struct {
		sync.Mutex
		_ [56]byte // one stripe per cache line
	}
}

const admitStripes = 64

func (l *admitLocks) of(key string) *sync.Mutex {
	return &l.stripes[Hash(key)%admitStripes].Mutex
}

// Hash hashes s (FNV-1a, 32 bits) to spread keys over lock stripes.
func Hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
