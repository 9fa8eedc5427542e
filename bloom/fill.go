package bloom

import "context"

// FillRatio returns the share of the filter's bits that are set, in [0, 1]:
// its saturation. The false-positive rate is about FillRatio^k, so a ratio
// well above one half means the filter holds more keys than it was sized for
// and should be rebuilt larger. It counts the bits (m/64 words) under the
// read lock; it never fails.
func (l *Local) FillRatio(context.Context) (float64, error) {
	l.mu.RLock()
	n := l.f.BitSet().Count()
	l.mu.RUnlock()
	return float64(n) / float64(l.p.M), nil
}

// FillRatio is Local.FillRatio for the shared filter: one BITCOUNT of the
// bitmap in Redis (O(m/8) bytes of work on the server), so call it at a
// metrics interval, not per request. A missing bitmap counts as empty.
func (r *Redis) FillRatio(ctx context.Context) (float64, error) {
	n, err := r.rdb.BitCount(ctx, r.k.Bits, nil).Result()
	if err != nil {
		return 0, r.wrap(err)
	}
	return float64(n) / float64(r.p.M), nil
}
