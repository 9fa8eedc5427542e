package wire

import "testing"

func TestKeyLayouts(t *testing.T) {
	q := QueueKeys("wq", 3)
	if q.Due("users") != "{wq:3}:due:users" || q.Data != "{wq:3}:data" || QueueKeys("wq", 0).Dead != "{wq}:dead" {
		t.Errorf("queue keys %+v", q)
	}
	for key, want := range map[string]struct {
		ns     string
		shard  int
		target string
		ok     bool
	}{
		"{wq}:due:users":    {"wq", 0, "users", true},
		"{wq:3}:due:users":  {"wq", 3, "users", true},
		"{a:b}:due:t":       {"a:b", 0, "t", true},
		"{wq:03}:due:users": {"wq:03", 0, "users", true},
		"{wq}:due:":         {"", 0, "", false},
		"{wq}:data":         {"", 0, "", false},
		"wq:due:users":      {"", 0, "", false},
	} {
		ns, shard, target, ok := QueueDue(key)
		if ns != want.ns || shard != want.shard || target != want.target || ok != want.ok {
			t.Errorf("QueueDue(%q) = %q %d %q %v, want %+v", key, ns, shard, target, ok, want)
		}
	}
	for key, want := range map[string][2]string{
		"lock:{orders}":                 {"lock:{orders}", LockMutex},
		"lock:orders:{42}:lock":         {"lock:orders:{42}:lock", LockMutex},
		"lock:orders:{42}:lock:rw":      {"lock:orders:{42}:lock", LockRWMutex},
		"lock:{orders}:readers":         {"lock:{orders}", LockReaders},
		"lock:orders:{42}:lock:waiters": {"", ""},
		"lock:orders":                   {"", ""},
		"lock:{}":                       {"", ""},
	} {
		base, kind, _ := LockKey(key)
		if base != want[0] || kind != want[1] {
			t.Errorf("LockKey(%q) = %q %q, want %q", key, base, kind, want)
		}
	}
	if name, ok := BloomName(BloomFilterKeys("users").Cfg); !ok || name != "users" {
		t.Errorf("BloomName = %q, %v", name, ok)
	}
	if m, k, ready, ok := ParseBloomConfig("m=96 k=7 v=1 ready=1"); !ok || m != 96 || k != 7 || !ready {
		t.Errorf("ParseBloomConfig = %d %d %v %v", m, k, ready, ok)
	}
	if m, k, ready, ok := ParseBloomConfig(BloomConfig(96, 7, 1) + " ready=0"); !ok || m != 96 || k != 7 || ready {
		t.Errorf("BloomConfig read back as %d %d %v %v", m, k, ready, ok)
	}
	if StockBucketKeys("s:", "sku", 2).Meta != "{s:sku:2}:m" || StockSalesKey("s:") != "s:sales" {
		t.Error("stock bucket keys")
	}
}

// Foreign keys and values: recognised as nothing, never a panic.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{"", "{", "{}", "{a}", "{a}:due:", "{a:1}:dead", "x{a}:rw", "m=1 k=2", "m=x", "1:o", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		HashTag(s)
		LockKey(s)
		QueueDue(s)
		QueueDead(s)
		BloomName(s)
		ParseBloomConfig(s)
		ParseUnfencedLock(s)
		ParseFencedLock(s)
		Classify([]byte(s))
	})
}

// A RedisPositions value reads back as written, in any field order cjson
// writes; other JSON and other strings are not one.
func TestBinlogPosition(t *testing.T) {
	if p, ok := ParseBinlogPosition(FormatBinlogPosition("bin.000042", 1234)); !ok || p.File != "bin.000042" || p.Offset != 1234 || p.Tailer != "" {
		t.Errorf("FormatBinlogPosition read back as %+v, %v", p, ok)
	}
	leased := []byte(`{"until":1.764000030e+12,"tailer":"t1","offset":4,"file":"bin.000001"}`)
	if p, ok := ParseBinlogPosition(leased); !ok || p.Tailer != "t1" || p.UntilMS != 1_764_000_030_000 || p.File != "bin.000001" || !BinlogCandidate(leased[:HeaderSize]) {
		t.Errorf("a leased value read as %+v, %v", p, ok)
	}
	for _, v := range []string{`{"file":""}`, `{"offset":"x"}`, `[1]`, `null`, `v1`, `{"tailer":3}`} {
		if _, ok := ParseBinlogPosition([]byte(v)); ok {
			t.Errorf("%s read as a position", v)
		}
	}
	if BinlogCandidate([]byte(`{"name":"x"}`)) || BinlogCandidate([]byte("plain")) {
		t.Error("a foreign value taken for a candidate")
	}
}
