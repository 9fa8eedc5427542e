package lock

import (
	"fmt"
	"strings"
)

// Key layout. Every key of one lock starts with base = prefix + "{" + name +
// "}" (or prefix + name when the name carries its own hash tag), so they all
// share one hash tag and live in one Redis Cluster slot; every script of the package can therefore touch all of them, and the
// release notification (a shard channel on a cluster) is served by the same
// node.
//
//	base                hash: owner, n (hold count), token, w  Mutex (and Redlock, per node);
//	                    a release keeps token (the fencing counter) until the last lease ends;
//	                    w: a waiter was refused, so the release looks at the wait list
//	base:fence          last fencing token, expires with the lease  RWMutex writer
//	base:released       channel announcing Mutex releases
//	base:waiters        zset: client id -> expiry (ms)        clients waiting for the Mutex
//	base:rw             hash: owner, n, token                 RWMutex writer
//	base:readers        zset: owner -> lease expiry (ms)      RWMutex readers
//	base:holds          hash: owner -> hold count             RWMutex readers
//	base:writers        zset: waiting writer -> expiry (ms)   RWMutex writers queued ahead of readers
//	base:rw:released    channel announcing RWMutex releases
const (
	fenceSuffix    = ":fence"
	readersSuffix  = ":readers"
	holdsSuffix    = ":holds"
	releasedSuffix = ":released"
	waitersSuffix  = ":waiters"
	rwSuffix       = ":rw"
	writersSuffix  = ":writers"
)

// baseKey returns the common start of every key of the named lock: the name
// wrapped in braces, so that it is the hash tag of every key of the lock.
// A name that carries its own hash tag ("orders:{42}:lock") is used as it
// is, so that the lock lives in the cluster slot of the data it guards and a
// script can touch both. A name whose braces would leave the keys without
// one common tag is refused with ErrInvalidName.
func baseKey(prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	if !strings.ContainsAny(name, "{}") {
		return prefix + "{" + name + "}", nil
	}
	// Redis hashes the part between the first '{' and the first '}' after
	// it, if that part is not empty.
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return "", fmt.Errorf("%w: %q has a '}' without a '{' before it", ErrInvalidName, name)
	}
	closing := strings.IndexByte(name[open+1:], '}')
	switch {
	case closing < 0:
		return "", fmt.Errorf("%w: %q opens a hash tag with '{' but does not close it", ErrInvalidName, name)
	case closing == 0:
		return "", fmt.Errorf("%w: %q has an empty hash tag \"{}\"", ErrInvalidName, name)
	case strings.IndexByte(name[:open], '}') >= 0:
		return "", fmt.Errorf("%w: %q has a '}' before its hash tag", ErrInvalidName, name)
	}
	return prefix + name, nil
}

// validPrefix reports whether prefix can precede a hash tag without
// changing it.
func validPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("lock: key prefix %q contains '{' or '}'", prefix)
	}
	return nil
}
