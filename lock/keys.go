package lock

import (
	"fmt"
	"strings"
)

// Key layout. Every key of one lock starts with base = prefix + "{" + name +
// "}", so they all share the hash tag {name} and live in one Redis Cluster
// slot; every script of the package can therefore touch all of them, and the
// release notification (a shard channel on a cluster) is served by the same
// node.
//
//	base                hash: owner, n (hold count), token   Mutex (and Redlock, per node)
//	base:fence          fencing token counter, never expires  Mutex, RWMutex writer
//	base:released       channel announcing Mutex releases
//	base:waiters        zset: client id -> expiry (ms)        clients waiting for the Mutex
//	base:rw             hash: owner, n, token                 RWMutex writer
//	base:readers        zset: owner -> lease expiry (ms)      RWMutex readers
//	base:holds          hash: owner -> hold count             RWMutex readers
//	base:rw:released    channel announcing RWMutex releases
const (
	fenceSuffix    = ":fence"
	readersSuffix  = ":readers"
	holdsSuffix    = ":holds"
	releasedSuffix = ":released"
	waitersSuffix  = ":waiters"
	rwSuffix       = ":rw"
)

// baseKey returns the common start of every key of the named lock.
func baseKey(prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("lock: empty lock name")
	}
	// A '}' in the name could end the hash tag early, and "{}" (a name
	// starting with '}') would disable it, scattering the lock's keys
	// across slots.
	if strings.ContainsRune(name, '}') {
		return "", fmt.Errorf("lock: lock name %q contains '}'", name)
	}
	return prefix + "{" + name + "}", nil
}

// validPrefix reports whether prefix can precede a hash tag without
// changing it.
func validPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("lock: key prefix %q contains '{' or '}'", prefix)
	}
	return nil
}
