package mariadbtest

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// requireEnv turns the skip for a missing mariadbd into a failure (CI sets it).
const requireEnv = "CACHEGUARD_REQUIRE_MARIADB"

// One MariaDB server per test binary; each test uses its own database.
var server struct {
	once sync.Once
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	skip string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.cmd != nil {
		server.cmd.Process.Kill()
		<-server.done
		os.RemoveAll(server.dir)
	}
	os.Exit(code)
}

func lookBinary(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, d := range []string{"/usr/sbin", "/usr/local/sbin"} {
			if st, err := os.Stat(filepath.Join(d, n)); err == nil && !st.IsDir() {
				return filepath.Join(d, n)
			}
		}
	}
	return ""
}

// newDB returns a connection pool to a fresh database on the shared server.
func newDB(t *testing.T) *sql.DB {
	t.Helper()
	server.once.Do(start)
	if server.skip != "" {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s and %s=1", server.skip, requireEnv)
		}
		t.Skip(server.skip)
	}
	if server.err != nil {
		t.Fatalf("mariadb: %v", server.err)
	}
	root, err := sql.Open("mysql", "root@tcp("+server.addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name := fmt.Sprintf("t%d", time.Now().UnixNano())
	if _, err := root.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "root@tcp("+server.addr+")/"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func start() {
	mysqld := lookBinary("mariadbd", "mysqld")
	install := lookBinary("mariadb-install-db", "mysql_install_db")
	if mysqld == "" || install == "" {
		server.skip = "mariadbd or mariadb-install-db not found (apt-get install mariadb-server)"
		return
	}
	dir, err := os.MkdirTemp("", "stock-mariadb")
	if err != nil {
		server.err = err
		return
	}
	server.dir = dir
	data := filepath.Join(dir, "data")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	if out, err := exec.Command(install, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, user...)...).CombinedOutput(); err != nil {
		server.err = fmt.Errorf("%s: %v\n%s", install, err, out)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		server.err = err
		return
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	server.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	server.cmd = exec.Command(mysqld, append([]string{"--no-defaults", "--datadir=" + data,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(dir, "sock"), "--pid-file=" + filepath.Join(dir, "pid"),
		"--log-error=" + filepath.Join(dir, "error.log"), "--skip-name-resolve",
		"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=16M"}, user...)...)
	if err := server.cmd.Start(); err != nil {
		server.err = err
		server.cmd = nil
		return
	}
	server.done = make(chan struct{})
	go func() { server.cmd.Wait(); close(server.done) }()
	// Wait for the process to accept connections.
	db, _ := sql.Open("mysql", "root@tcp("+server.addr+")/")
	defer db.Close()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if err = db.Ping(); err == nil {
			return
		}
		select {
		case <-server.done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			server.err = fmt.Errorf("mariadbd exited:\n%s", log)
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			server.err = fmt.Errorf("mariadbd on %s not answering: %v", server.addr, err)
			return
		}
	}
}
