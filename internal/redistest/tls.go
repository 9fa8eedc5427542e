package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TLS: servers that accept TLS connections only (port 0, tls-port), with
// certificates made once per test binary: a certificate authority and one
// certificate it signed for 127.0.0.1, ::1 and localhost, good for a server
// and a client. Every server presents it, requires clients to present one
// signed by the authority (tls-auth-clients, Redis's default), and uses it
// to reach the other nodes (tls-replication, tls-cluster; Sentinels talk
// TLS to the nodes and to each other). Clients get it with ClientTLS.

// testCerts is the authority and the certificate, in PEM and parsed.
type testCerts struct {
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool
	pair                   tls.Certificate
}

var certs struct {
	once sync.Once
	c    *testCerts
	err  error
}

func loadCerts() (*testCerts, error) {
	certs.once.Do(func() { certs.c, certs.err = makeCerts() })
	return certs.c, certs.err
}

func makeCerts() (*testCerts, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cacheguard test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &testCerts{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
	}
	c.pool.AddCert(caCert)
	if c.pair, err = tls.X509KeyPair(c.certPEM, c.keyPEM); err != nil {
		return nil, err
	}
	return c, nil
}

// ClientTLS returns a new TLS configuration for clients of the servers this
// package starts with TLS: it trusts their authority and presents a
// certificate it signed.
func ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	c, err := loadCerts()
	if err != nil {
		t.Fatalf("redistest: test certificates: %v", err)
	}
	return c.clientConfig()
}

func (c *testCerts) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{c.pair}, MinVersion: tls.VersionTLS12}
}

// tlsArgs writes the certificates into dir and returns the directives that
// make a server (or Sentinel) listen with TLS only on port.
func tlsArgs(dir, port string) ([]string, error) {
	c, err := loadCerts()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.crt": c.caPEM, "redis.crt": c.certPEM, "redis.key": c.keyPEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{
		"--port", "0",
		"--tls-port", port,
		"--tls-cert-file", filepath.Join(dir, "redis.crt"),
		"--tls-key-file", filepath.Join(dir, "redis.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"),
		"--tls-replication", "yes",
		"--tls-cluster", "yes",
	}, nil
}

// tlsSupport remembers whether redis-server was built with TLS.
var tlsSupport struct {
	once sync.Once
	err  error
}

// NeedTLS skips the test (fails it under CACHEGUARD_REQUIRE_REDIS=1) when no
// redis-server is on PATH or it was built without TLS.
func NeedTLS(t testing.TB) {
	t.Helper()
	NeedServer(t)
	tlsSupport.once.Do(func() {
		// With TLS a server told to listen on neither port exits saying so;
		// without, it refuses tls-port as an unknown directive.
		out, _ := exec.Command(ServerPath(), "--port", "0", "--tls-port", "0", "--save", "", "--appendonly", "no").CombinedOutput()
		if !strings.Contains(string(out), "not listen anywhere") {
			tlsSupport.err = fmt.Errorf("redis-server does not take tls-port (built without TLS?): %s", strings.TrimSpace(string(out)))
		}
	})
	if tlsSupport.err == nil {
		return
	}
	if required() {
		t.Fatalf("redistest: %v, and %s=1", tlsSupport.err, RequireEnv)
	}
	t.Skipf("redistest: %v; this test needs a redis-server built with TLS", tlsSupport.err)
}

// StartTLS is Start for a server that accepts TLS connections only; its
// Client speaks TLS. It skips the test as NeedTLS does.
func StartTLS(t testing.TB, extra ...string) *Server {
	t.Helper()
	NeedTLS(t)
	return launch(t, &Server{extra: extra, tls: true})
}
