package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ACLDoc is the document, relative to the repository's root, that lists the
// Redis ACL each package needs, in fenced blocks opened by "```acl <name>".
// Each line of a block is one ACL SETUSER command for the user "app", with
// placeholders in angle brackets ("<prefix>"); ACL SETUSER adds to what the
// user has, so the lines of several blocks grant their union.
const ACLDoc = "docs/acl.md"

// aclUser is the user name the document's lines grant to.
const aclUser = "app"

// ACLClient creates a Redis user on every node behind admin (a single
// node's client or a cluster client, connected as a user that may run ACL
// SETUSER), grants it exactly the lines of the named blocks of ACLDoc with
// the placeholders replaced by vars, and returns a client of the same kind
// logged in as that user. The user is deleted when the test ends, and the
// test fails if a node's ACL LOG shows anything refused to it (even a
// refusal the package ignored). It skips without redis-server: miniredis has
// no ACL.
func ACLClient(t testing.TB, admin redis.UniversalClient, vars map[string]string, blocks ...string) redis.UniversalClient {
	t.Helper()
	return aclClient(t, admin, vars, blocks, true)
}

// ACLClientRefused is ACLClient for a test of what a package does when it is
// refused something: the refusals are only logged.
func ACLClientRefused(t testing.TB, admin redis.UniversalClient, vars map[string]string, blocks ...string) redis.UniversalClient {
	t.Helper()
	return aclClient(t, admin, vars, blocks, false)
}

func aclClient(t testing.TB, admin redis.UniversalClient, vars map[string]string, blocks []string, strict bool) redis.UniversalClient {
	t.Helper()
	NeedServer(t)
	var lines [][]string
	for _, b := range blocks {
		ls, err := ACLBlock(b)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		lines = append(lines, ls...)
	}
	user := "u-" + strings.ReplaceAll(Name(t), ":", "-")
	pass := randomHex(t)
	var cmds [][]any
	for _, words := range lines {
		cmd, err := aclCommand(words, user, pass, vars)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	EachNode(t, admin, func(ctx context.Context, c *redis.Client) error {
		c.Do(ctx, "ACL", "DELUSER", user) // a rerun in the same binary starts afresh
		c.Do(ctx, "ACL", "LOG", "RESET")
		for _, cmd := range cmds {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				return fmt.Errorf("%v: %w", cmd, err)
			}
		}
		return nil
	})
	t.Cleanup(func() {
		EachNode(t, admin, func(ctx context.Context, c *redis.Client) error {
			// Nothing the user sent may have been refused, not even a
			// command whose refusal the package ignores.
			log, err := c.Do(ctx, "ACL", "LOG", "20").Slice()
			if err != nil {
				return err
			}
			for _, e := range log {
				switch {
				case !refusedTo(e, user):
				case strict:
					t.Errorf("redistest: %s refused %s: %v", c.Options().Addr, user, e)
				default:
					t.Logf("redistest: %s refused %s: %v", c.Options().Addr, user, e)
				}
			}
			return c.Do(ctx, "ACL", "DELUSER", user).Err()
		})
	})
	var c redis.UniversalClient
	switch a := admin.(type) {
	case *redis.ClusterClient:
		o := *a.Options()
		o.Addrs = slices.Clone(o.Addrs) // go-redis appends the nodes it finds to it
		o.Username, o.Password = user, pass
		c = redis.NewClusterClient(&o)
	case *redis.Client:
		o := *a.Options()
		o.Username, o.Password = user, pass
		c = redis.NewClient(&o)
	default:
		t.Fatalf("redistest: ACLClient: unexpected client %T", admin)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ACLBlock returns the lines of ACLDoc's block name, each split in words.
func ACLBlock(name string) ([][]string, error) {
	path, err := findUp(ACLDoc)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		lines [][]string
		in    bool
		found bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && line == "```acl "+name:
			in, found = true, true
		case in && line == "```":
			in = false
		case in && line != "":
			lines = append(lines, strings.Fields(line))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s has no block \"acl %s\"", path, name)
	}
	return lines, nil
}

// aclCommand checks that words is "ACL SETUSER app ..." and makes it the
// command for user, with ">password" rules given pass and the placeholders
// replaced.
func aclCommand(words []string, user, pass string, vars map[string]string) ([]any, error) {
	if len(words) < 3 || !strings.EqualFold(words[0], "ACL") || !strings.EqualFold(words[1], "SETUSER") || words[2] != aclUser {
		return nil, fmt.Errorf("ACL line %q is not \"ACL SETUSER %s ...\"", strings.Join(words, " "), aclUser)
	}
	cmd := []any{"ACL", "SETUSER", user}
	for _, w := range words[3:] {
		if strings.HasPrefix(w, ">") {
			w = ">" + pass
		}
		for k, v := range vars {
			w = strings.ReplaceAll(w, "<"+k+">", v)
		}
		if i := strings.IndexByte(w, '<'); i >= 0 && strings.IndexByte(w[i:], '>') > 0 {
			return nil, fmt.Errorf("ACL rule %q: placeholder without a value", w)
		}
		cmd = append(cmd, w)
	}
	return cmd, nil
}

// findUp looks for rel in the working directory and its parents.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found above the working directory", rel)
		}
		dir = parent
	}
}

func randomHex(t testing.TB) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return hex.EncodeToString(b)
}

// refusedTo reports whether an ACL LOG entry is a refusal to user.
func refusedTo(entry any, user string) bool {
	switch e := entry.(type) {
	case map[any]any: // RESP3
		return e["username"] == user
	case []any: // RESP2: field, value, ...
		for i := 0; i+1 < len(e); i += 2 {
			if e[i] == "username" {
				return e[i+1] == user
			}
		}
	}
	return true // unknown shape: shown
}

// ACLTopology is a layout the ACL document is checked on.
type ACLTopology struct {
	Topology
	cluster bool
}

// ACLTopologies returns a single node and a three-master cluster: the
// binary's shared ones when shared (the package's TestMain calls Main),
// else started by each test.
func ACLTopologies(shared bool) []ACLTopology {
	if shared {
		return []ACLTopology{
			{Topology{Name: "single", New: SharedSingle}, false},
			{Topology{Name: "cluster", New: SharedCluster}, true},
		}
	}
	all := Topologies()
	return []ACLTopology{{all[0], false}, {all[1], true}}
}

// Blocks returns the names of ACLDoc's blocks a user of the packages named
// needs on t: "connection", "cluster" on a cluster, and for each package its
// block and, when the document has one, its block for t ("cache single",
// "cache cluster").
func (t ACLTopology) Blocks(pkgs ...string) []string {
	blocks := []string{"connection"}
	if t.cluster {
		blocks = append(blocks, "cluster")
	}
	for _, p := range pkgs {
		blocks = append(blocks, p)
		if _, err := ACLBlock(p + " " + t.Name); err == nil {
			blocks = append(blocks, p+" "+t.Name)
		}
	}
	return blocks
}

// OnACL runs body as a subtest on each of ACLTopologies(shared), with admin
// and a client logged in as a user granted the blocks t.Blocks(pkgs...)
// names, their placeholders filled by vars (nil: none).
func OnACL(t *testing.T, shared bool, pkgs []string, vars func(t *testing.T) map[string]string,
	body func(t *testing.T, rdb, admin redis.UniversalClient)) {
	for _, top := range ACLTopologies(shared) {
		t.Run(top.Name, func(t *testing.T) {
			var v map[string]string
			if vars != nil {
				v = vars(t)
			}
			admin := top.New(t)
			body(t, ACLClient(t, admin, v, top.Blocks(pkgs...)...), admin)
		})
	}
}
