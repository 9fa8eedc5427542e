package hotkey

import "strings"

// rules decide which keys may be tracked. The zero value allows every key.
type rules struct {
	allow   []string
	deny    []string
	filters []func(string) bool
}

func (r *rules) empty() bool {
	return len(r.allow) == 0 && len(r.deny) == 0 && len(r.filters) == 0
}

// allows reports whether key may be tracked: no deny prefix matches, an allow
// prefix matches when any are set, and every filter keeps it.
func (r *rules) allows(key string) bool {
	for _, p := range r.deny {
		if strings.HasPrefix(key, p) {
			return false
		}
	}
	if len(r.allow) > 0 {
		ok := false
		for _, p := range r.allow {
			if strings.HasPrefix(key, p) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, keep := range r.filters {
		if !keep(key) {
			return false
		}
	}
	return true
}
