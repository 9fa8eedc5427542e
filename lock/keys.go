package lock

import (
	"fmt"
	"strings"
)

// Key layout: internal/wire (the lock section of keys.go). Every key of one
// lock starts with base = prefix + "{" + name + "}" (or prefix + name when
// the name carries its own hash tag), so they all share one hash tag and live
// in one Redis Cluster slot; every script of the package can therefore touch
// all of them, and the release notification (a shard channel on a cluster)
// is served by the same node.

// baseKey returns the common start of every key of the named lock: the name
// wrapped in braces, so that it is the hash tag of every key of the lock.
// A name that carries its own hash tag ("orders:{42}:lock") is used as it
// is, so that the lock lives in the cluster slot of the data it guards and a
// script can touch both. A name whose braces would leave the keys without
// one common tag is refused with ErrInvalidArgument.
func baseKey(prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", ErrInvalidArgument)
	}
	if !strings.ContainsAny(name, "{}") {
		return prefix + "{" + name + "}", nil
	}
	// Redis hashes the part between the first '{' and the first '}' after
	// it, if that part is not empty.
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return "", fmt.Errorf("%w: %q has a '}' without a '{' before it", ErrInvalidArgument, name)
	}
	closing := strings.IndexByte(name[open+1:], '}')
	switch {
	case closing < 0:
		return "", fmt.Errorf("%w: %q opens a hash tag with '{' but does not close it", ErrInvalidArgument, name)
	case closing == 0:
		return "", fmt.Errorf("%w: %q has an empty hash tag \"{}\"", ErrInvalidArgument, name)
	case strings.IndexByte(name[:open], '}') >= 0:
		return "", fmt.Errorf("%w: %q has a '}' before its hash tag", ErrInvalidArgument, name)
	}
	return prefix + name, nil
}
