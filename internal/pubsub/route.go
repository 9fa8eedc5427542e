package pubsub

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// router maps a channel to the node serving it.
type router struct {
	rdb     redis.UniversalClient
	sharded bool // a cluster: shard channels on the slot's master
	perChan bool // a Ring: routes each subscription by channel name
	// failover is set for a Sentinel failover client: subscriptions go
	// through a client of their own that records the address it dialed.
	failover *failoverNode
}

// node is how a connection reaches its node.
type node struct {
	client redis.UniversalClient // subscribes through this
	// roleAddr returns the address to ask ROLE of, "" for no check, with
	// the options to dial it with.
	roleAddr func() (string, *redis.Options)
	// current, under Sentinel, returns the master's address now.
	current func(ctx context.Context) (string, error)
}

func newRouter(rdb redis.UniversalClient) router {
	r := router{rdb: rdb}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		r.sharded = true
	case *redis.Ring:
		r.perChan = true
	case *redis.Client:
		if c.Options().Addr == failoverAddr {
			r.failover = newFailoverNode(c)
		}
	}
	return r
}

// failoverAddr is the address go-redis gives a Sentinel failover client.
const failoverAddr = "FailoverClient"

// nodeOf returns the key of the connection that serves channel name and how
// to reach its node.
func (r *router) nodeOf(ctx context.Context, name string) (string, *node, error) {
	switch c := r.rdb.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, name)
		if err != nil {
			return "", nil, err
		}
		key, n := clusterNode(m)
		return key, n, nil
	case *redis.Ring:
		return name, &node{client: c}, nil
	}
	if f := r.failover; f != nil {
		return "", &node{client: f.client, roleAddr: f.dialedAddr, current: f.current}, nil
	}
	return "", &node{client: r.rdb}, nil
}

func clusterNode(m *redis.Client) (string, *node) {
	o := m.Options()
	return o.Addr, &node{client: m, roleAddr: func() (string, *redis.Options) { return o.Addr, o }}
}

// masters returns the masters (by connection key) that hold keys: every
// master of a cluster's slot map (read afresh), or the one node.
func (r *router) masters(ctx context.Context) (map[string]*node, error) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		out := map[string]*node{}
		err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			key, n := clusterNode(m)
			mu.Lock()
			out[key] = n
			mu.Unlock()
			return nil
		})
		return out, err
	}
	key, n, err := r.nodeOf(ctx, "")
	if err != nil {
		return nil, err
	}
	return map[string]*node{key: n}, nil
}

// reload asks a cluster client to reload its slot map.
func (r *router) reload(ctx context.Context) {
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

func (r *router) close() {
	if r.failover != nil {
		r.failover.client.Close()
	}
}

// failoverNode subscribes through a copy of a failover client's options whose
// dialer (go-redis's, which asks the Sentinels for the master) records the
// address of the connection it made: the node the subscription sits on.
// Every connection it makes goes through that dialer, which applies the
// client's own Dialer, TLS settings and Sentinel credentials (a failover
// client's options do not hold its Dialer apart from go-redis's).
type failoverNode struct {
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	opts   *redis.Options // the user's client's, for the ROLE client
	client *redis.Client

	mu     sync.Mutex
	dialed string
}

func newFailoverNode(c *redis.Client) *failoverNode {
	o := CopyOptions(c.Options())
	direct := o // the ROLE client dials the recorded address only
	f := &failoverNode{dial: o.Dialer, opts: &direct}
	direct.Dialer = f.dialNode
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := f.dial(ctx, network, addr)
		if err == nil {
			f.mu.Lock()
			f.dialed = cn.RemoteAddr().String()
			f.mu.Unlock()
		}
		return cn, err
	}
	f.client = redis.NewClient(&o)
	return f
}

func (f *failoverNode) dialedAddr() (string, *redis.Options) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dialed, f.opts
}

// dialNode dials the master the Sentinels name and refuses a connection to
// any node but addr: the ROLE client asks the node the subscription sits
// on, through the client's own dialer.
func (f *failoverNode) dialNode(ctx context.Context, network, addr string) (net.Conn, error) {
	cn, err := f.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if got := cn.RemoteAddr().String(); got != addr {
		cn.Close()
		return nil, fmt.Errorf("%w (subscribed on %s, the sentinels name %s)", ErrNotMaster, addr, got)
	}
	return cn, nil
}

// current dials the master the Sentinels name now and returns its address.
func (f *failoverNode) current(ctx context.Context) (string, error) {
	cn, err := f.dial(ctx, "tcp", failoverAddr)
	if err != nil {
		return "", err
	}
	defer cn.Close()
	return cn.RemoteAddr().String(), nil
}
