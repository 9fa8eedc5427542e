package cache

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// oldServer answers INFO as a Redis 6.2 server would; every other command
// gets an error. It stands for a server version no test machine runs.
func oldServer(t *testing.T, version string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					if strings.EqualFold(args[0], "info") {
						body := "# Server\r\nredis_version:" + version + "\r\n"
						fmt.Fprintf(conn, "$%d\r\n%s\r\n", len(body), body)
					} else {
						fmt.Fprintf(conn, "-ERR unknown command '%s'\r\n", args[0])
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("bad request %q: %v", line, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args = append(args, strings.TrimRight(arg, "\r\n"))
	}
	if len(args) == 0 {
		return nil, errors.New("empty command")
	}
	return args, nil
}

func TestNewRefusesOldServer(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: oldServer(t, "6.2.14"), Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	_, err := New[user](rdb)
	if !errors.Is(err, ErrUnsupportedServer) || !strings.Contains(err.Error(), "6.2.14") {
		t.Fatalf("New on a 6.2 server: %v; want ErrUnsupportedServer naming the version", err)
	}
	// A server whose version cannot be read is not refused.
	odd := redis.NewClient(&redis.Options{Addr: oldServer(t, "unknown"), Protocol: 2, DisableIdentity: true})
	defer odd.Close()
	c, err := New[user](odd)
	if err != nil {
		t.Fatalf("New with an unreadable version: %v", err)
	}
	c.Close()
	// Nor is an unreachable one (New does not need Redis up).
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer down.Close()
	if c, err = New[user](down); err != nil {
		t.Fatalf("New with Redis down: %v", err)
	}
	c.Close()
}

func TestRedisVersionParse(t *testing.T) {
	for info, want := range map[string]int{
		"# Server\r\nredis_version:7.2.4\r\nredis_git_sha1:0\r\n": 7,
		"redis_version:6.0.16\n":                                  6,
		"redis_version:255.255.255\r\n":                           255,
	} {
		v, ok := redisVersion(info)
		if !ok {
			t.Fatalf("%q: no version", info)
		}
		if m, ok := majorOf(v); !ok || m != want {
			t.Fatalf("%q: major %d, want %d", info, m, want)
		}
	}
	if _, ok := redisVersion("# Server\r\n"); ok {
		t.Fatal("version found in an INFO without one")
	}
}
