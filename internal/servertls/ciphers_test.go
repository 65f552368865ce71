package servertls_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestNoCBCSHA1Suites: whatever its certificate (the own CA's ECDSA one, an
// operator's RSA one), the listener refuses a TLS 1.2 client that offers
// only a CBC suite with HMAC-SHA1, and takes one that offers an AEAD suite
// or speaks TLS 1.3. The clients are Go's crypto/tls and, when installed,
// openssl s_client.
func TestNoCBCSHA1Suites(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	own, err := servertls.New(ctx, config.Config{Addr: "0.0.0.0:8443"}, s)
	if err != nil || own.Mode != servertls.ModeOwnCA {
		t.Fatalf("own CA: %+v %v", own, err)
	}
	certFile, keyFile := rsaCert(t)
	op, err := servertls.New(ctx, config.Config{Addr: "0.0.0.0:8443", TLSCert: certFile, TLSKey: keyFile}, s)
	if err != nil || op.Mode != servertls.ModeOperator {
		t.Fatalf("operator certificate: %+v %v", op, err)
	}
	openssl, _ := exec.LookPath("openssl")
	for _, tc := range []struct {
		name       string
		setup      *servertls.Setup
		cbc, aead  uint16
		opensslCBC string
	}{
		{"own CA (ECDSA)", own, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "ECDHE-ECDSA-AES128-SHA"},
		{"own CA (ECDSA), AES-256", own, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "ECDHE-ECDSA-AES256-SHA"},
		{"operator (RSA)", op, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "ECDHE-RSA-AES128-SHA"},
		{"operator (RSA), AES-256", op, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-RSA-AES256-SHA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveTLS(t, tc.setup.TLS)
			dial := func(max uint16, suites ...uint16) (*tls.ConnectionState, error) {
				c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", addr,
					&tls.Config{InsecureSkipVerify: true, MaxVersion: max, CipherSuites: suites, ServerName: "localhost"})
				if err != nil {
					return nil, err
				}
				defer c.Close()
				st := c.ConnectionState()
				return &st, nil
			}
			if _, err := dial(tls.VersionTLS12, tc.cbc); err == nil {
				t.Errorf("a TLS 1.2 client offering only %s was served", tls.CipherSuiteName(tc.cbc))
			}
			if st, err := dial(tls.VersionTLS12, tc.aead); err != nil || st.CipherSuite != tc.aead {
				t.Errorf("a TLS 1.2 client offering %s: %v", tls.CipherSuiteName(tc.aead), err)
			}
			if st, err := dial(tls.VersionTLS13); err != nil || st.Version != tls.VersionTLS13 {
				t.Errorf("a TLS 1.3 client: %v", err)
			}
			if openssl == "" {
				t.Log("openssl not installed: only Go's client tried")
				return
			}
			cmd := exec.Command(openssl, "s_client", "-connect", addr, "-servername", "localhost", "-tls1_2", "-cipher", tc.opensslCBC)
			cmd.Stdin = nil
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("openssl s_client -tls1_2 -cipher %s was served:\n%s", tc.opensslCBC, out)
			}
		})
	}
}

// serveTLS accepts TLS connections with cfg on a loopback port and
// completes their handshakes.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				c.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

// rsaCert writes a self-signed RSA certificate for localhost and its key.
func rsaCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
