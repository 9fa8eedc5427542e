package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A cache on a server that reports Redis 6.2 is refused: Ready, and every
// call, fail with an error matching ErrUnsupportedServer, naming the
// version, instead of a miss failing on SET NX GET; so is a second cache of
// the same client, which the first's probe answers.
func TestReadyRefusesOldServer(t *testing.T) {
	addr := oldRedisServer(t, "6.2.0")
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	for i := range 2 {
		c, err := New(rdb, Values[string]{}, WithPrefix(fmt.Sprintf("opt%d:", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = c.Ready(ctx)
		cancel()
		if !errors.Is(err, ErrUnsupportedServer) || !strings.Contains(err.Error(), "6.2.0") {
			t.Fatalf("cache %d: Ready err = %v, want ErrUnsupportedServer naming 6.2.0", i, err)
		}
		loads := 0
		_, err = c.Get(t.Context(), "k", func(context.Context, string) (string, error) { loads++; return "v", nil })
		if !errors.Is(err, ErrUnsupportedServer) || loads != 0 {
			t.Fatalf("cache %d: Get err = %v after %d loads, want ErrUnsupportedServer and no load", i, err, loads)
		}
	}
}

// oldRedisServer serves just enough RESP2 for a go-redis client to connect
// and read INFO server, reporting version; every other command (HELLO,
// CLIENT SETINFO) gets an error reply, which go-redis tolerates at connect.
// The listener and every connection are closed when the test ends.
func oldRedisServer(t *testing.T, version string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	info := "# Server\r\nredis_version:" + version + "\r\nredis_mode:standalone\r\n"
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveOldRedis(conn, info)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func serveOldRedis(conn net.Conn, info string) {
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch {
		case len(args) > 0 && strings.EqualFold(args[0], "INFO"):
			reply = fmt.Sprintf("$%d\r\n%s\r\n", len(info), info)
		case len(args) > 0 && strings.EqualFold(args[0], "PING"):
			reply = "+PONG\r\n"
		default:
			reply = "-ERR unknown command\r\n"
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}
