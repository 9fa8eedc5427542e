package binlog

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// RequireMariaDBEnv turns the skip for a missing mariadbd into a failure (CI
// sets it).
const RequireMariaDBEnv = "CACHEGUARD_REQUIRE_MARIADB"

// The tests share one MariaDB server per test binary, with its own datadir
// and port, binary logging on in ROW format. Each test uses its own database.
var server struct {
	once sync.Once
	db   *mariadb
	err  error
	skip string
}

type mariadb struct {
	Addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.db != nil {
		server.db.stop()
	}
	os.Exit(code)
}

// findBinary looks name up on PATH and in the sbin directories, where
// Debian puts mariadbd.
func findBinary(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	return ""
}

// needMariaDB returns the shared server, starting it on first use. Without
// mariadbd the test is skipped, or fails under CACHEGUARD_REQUIRE_MARIADB=1.
func needMariaDB(t testing.TB) *mariadb {
	t.Helper()
	server.once.Do(func() {
		mysqld := findBinary("mariadbd", "mysqld")
		install := findBinary("mariadb-install-db", "mysql_install_db")
		if mysqld == "" || install == "" {
			server.skip = "mariadbd or mariadb-install-db not found; install mariadb-server (apt-get install mariadb-server) to run the binlog tests"
			return
		}
		server.db, server.err = startMariaDB(mysqld, install)
	})
	if server.skip != "" {
		if os.Getenv(RequireMariaDBEnv) == "1" {
			t.Fatalf("%s and %s=1", server.skip, RequireMariaDBEnv)
		}
		t.Skip(server.skip)
	}
	if server.err != nil {
		t.Fatalf("starting MariaDB: %v", server.err)
	}
	return server.db
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startMariaDB(mysqld, install string) (*mariadb, error) {
	dir, err := os.MkdirTemp("", "cacheguard-mariadb")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"} // mariadbd refuses to run as root otherwise
	}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db"}, user...)
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %v\n%s", install, err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m := &mariadb{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, done: make(chan struct{})}
	m.cmd = exec.Command(mysqld, append([]string{"--no-defaults",
		"--datadir=" + data,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "sock"),
		"--pid-file=" + filepath.Join(dir, "pid"),
		"--log-error=" + filepath.Join(dir, "error.log"),
		"--log-bin=" + filepath.Join(data, "binlog"),
		"--binlog-format=ROW",
		"--binlog-row-metadata=FULL",
		"--server-id=1",
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=16M",
		"--innodb-log-file-size=16M",
	}, user...)...)
	if err := m.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	// Wait for the server to accept connections (a process coming up, not
	// the code under test).
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := client.Connect(m.Addr, "root", "", "")
		if err == nil {
			c.Close()
			return m, nil
		}
		select {
		case <-m.done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("mariadbd exited:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("mariadbd on %s not answering: %v", m.Addr, err)
		}
	}
}

func (m *mariadb) stop() {
	m.cmd.Process.Kill()
	<-m.done
	os.RemoveAll(m.dir)
}

// exec runs SQL statements on db (may be empty) and fails the test on error.
func (m *mariadb) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	c, err := client.Connect(m.Addr, "root", "", db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.Execute(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// query returns the first column of the first row, and false for no row.
func (m *mariadb) query(ctx context.Context, db, q string, args ...any) (string, bool, error) {
	c, err := client.Connect(m.Addr, "root", "", db)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	r, err := c.Execute(q, args...)
	if err != nil {
		return "", false, err
	}
	if r.RowNumber() == 0 {
		return "", false, nil
	}
	s, err := r.GetString(0, 0)
	return s, err == nil, err
}

// position returns the server's current binlog position.
func (m *mariadb) position(t testing.TB) Position {
	t.Helper()
	c, err := client.Connect(m.Addr, "root", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Execute("SHOW BINLOG STATUS")
	if err != nil {
		t.Fatal(err)
	}
	name, _ := r.GetString(0, 0)
	pos, _ := r.GetInt(0, 1)
	return Position{File: name, Offset: uint32(pos)}
}
