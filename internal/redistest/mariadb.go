package redistest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// RequireMariaDBEnv is the environment variable that turns the skip for a
// missing mariadbd into a failure (CI sets it).
const RequireMariaDBEnv = "CACHEGUARD_REQUIRE_MARIADB"

// mariaDBStartTimeout bounds how long mariadbd may take to greet a client.
const mariaDBStartTimeout = 60 * time.Second

// MariaDB is a mariadbd process with a datadir of its own on a free loopback
// port: user root without a password, the binary log on in ROW format with
// full row images and metadata (what a binlog reader needs), server id 1.
// Tests open it with the driver of their module ("root@tcp(" + Addr + ")/").
type MariaDB struct {
	Addr string
}

var sharedMariaDB struct {
	db    *MariaDB
	err   error
	tried bool
}

// SharedMariaDB returns the MariaDB server shared by the test binary,
// starting it on first use; Main stops it. Tests sharing it keep to their
// own databases. Without mariadbd the test is skipped, or fails under
// CACHEGUARD_REQUIRE_MARIADB=1.
func SharedMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	mysqld := findBinary("mariadbd", "mysqld")
	install := findBinary("mariadb-install-db", "mysql_install_db")
	if mysqld == "" || install == "" {
		const why = "redistest: mariadbd or mariadb-install-db not found (apt-get install mariadb-server)"
		if os.Getenv(RequireMariaDBEnv) == "1" {
			t.Fatalf("%s and %s=1", why, RequireMariaDBEnv)
		}
		t.Skip(why)
	}
	shared.mu.Lock()
	if !sharedMariaDB.tried {
		sharedMariaDB.tried = true
		sharedMariaDB.err = sharedStart(func(tb testing.TB) {
			sharedMariaDB.db = startMariaDB(tb, mysqld, install)
		})
	}
	db, err := sharedMariaDB.db, sharedMariaDB.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("redistest: shared MariaDB: %v", err)
	}
	return db
}

// findBinary looks each name up on PATH and in the sbin directories, where
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

func startMariaDB(t testing.TB, mysqld, install string) *MariaDB {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"} // mariadbd refuses to run as root otherwise
	}
	if out, err := exec.Command(install, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, user...)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", install, err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	db := &MariaDB{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	cmd := exec.Command(mysqld, append([]string{"--no-defaults",
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
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", mysqld, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	// Wait for the server's greeting (a process coming up, not the code
	// under test).
	deadline := time.Now().Add(mariaDBStartTimeout)
	for {
		err := greets(db.Addr)
		if err == nil {
			return db
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mariadbd exited:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mariadbd on %s not answering: %v", db.Addr, err)
		}
	}
}

// greets reports whether the server at addr sends a MySQL protocol 10
// handshake: it does once it accepts clients.
func greets(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	var head [5]byte // 3 bytes of length, a sequence number, the payload's first byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return err
	}
	if head[4] != 10 {
		return fmt.Errorf("no handshake from %s (first byte %#x)", addr, head[4])
	}
	return nil
}
