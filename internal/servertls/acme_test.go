package servertls_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// pebbleVersion is the ACME test server the test builds (Let's Encrypt's
// Pebble, a Go module).
const pebbleVersion = "github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.1"

func writeKey(t *testing.T, dir string, c *tls.Certificate) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startPebble builds and runs Pebble on loopback; it answers the directory
// URL, a client that trusts Pebble's own HTTPS, and the management address.
func startPebble(t *testing.T) (dirURL string, hc *http.Client, mgmt string) {
	t.Helper()
	dir := t.TempDir()
	install := exec.Command("go", "install", pebbleVersion)
	install.Dir = dir
	install.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("build pebble: %v\n%s", err, out)
	}
	// Pebble's HTTPS listener gets a certificate from a CA made here.
	ca, err := servertls.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	iss, err := servertls.NewIssuer(ca, func() servertls.Names { return servertls.HostNames("https://localhost", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	c, err := iss.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := writeKey(t, dir, c)
	listen, mgmt := freePort(t), freePort(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress": listen, "managementListenAddress": mgmt, "certificate": certFile, "privateKey": keyFile,
		"httpPort": 5002, "tlsPort": 5001, "ocspResponderURL": "", "externalAccountBindingRequired": false,
	}}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "pebble"), "-config", cfgFile)
	// Every challenge is taken as valid: the test machine is no public
	// host; nonces are never refused at random.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_ALWAYS_VALID=1", "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pebble:\n%s", logs.String())
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca.CertPEM))
	hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	dirURL = "https://" + listen + "/dir"
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(dirURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not answer within 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return dirURL, hc, mgmt
}

// TestACMEWithPebble: a certificate for --acme-domain is issued by the
// ACME server on the first handshake and served; it is cached in the
// database, so a second replica serves it without asking the ACME server
// again. Tokens carry no pin with ACME.
func TestACMEWithPebble(t *testing.T) {
	dirURL, hc, mgmt := startPebble(t)
	ctx := context.Background()
	s1, dbURL := storetest.OpenURL(t)
	cfg := config.Config{Addr: "127.0.0.1:0", ACMEDomains: []string{"patchd.test"}, ACMEEmail: "ops@patchd.test",
		ACMEDirectory: dirURL, ACMEHTTP: hc}
	setup, err := servertls.New(ctx, cfg, s1)
	if err != nil {
		t.Fatal(err)
	}
	if setup.Mode != servertls.ModeACME || setup.Pin != "" || setup.CACert != nil {
		t.Fatalf("setup %+v", setup)
	}
	if pin, _ := s1.EnrollPin(ctx); pin != "" {
		t.Fatalf("pin with ACME: %q", pin)
	}
	// Pebble's root, which signs what it issues.
	resp, err := hc.Get("https://" + mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %q", rootPEM)
	}

	serial := serveAndHandshake(t, setup, roots)

	// The second replica on the same database: the cached certificate,
	// even with the ACME server gone.
	s2, err := store.Open(ctx, dbURL, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.TLSData(ctx, store.ACMEPrefix+"patchd.test"); err != nil {
		t.Fatalf("certificate not cached in the database: %v", err)
	}
	cfg.ACMEDirectory = "https://" + freePort(t) + "/dir" // nothing listens there
	setup2, err := servertls.New(ctx, cfg, s2)
	if err != nil {
		t.Fatal(err)
	}
	if got := serveAndHandshake(t, setup2, roots); got != serial {
		t.Fatalf("second replica serves certificate %s, the first %s", got, serial)
	}
}

// serveAndHandshake serves setup's TLS on loopback and connects as a
// client of patchd.test; it answers the served certificate's serial.
func serveAndHandshake(t *testing.T, setup *servertls.Setup, roots *x509.CertPool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }), TLSConfig: setup.TLS}
	go hs.ServeTLS(ln, "", "")
	defer hs.Close()
	c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "patchd.test"},
	}}
	resp, err := c.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("HTTPS with the ACME certificate: %v", err)
	}
	defer resp.Body.Close()
	leaf := resp.TLS.PeerCertificates[0]
	if !slices.Contains(leaf.DNSNames, "patchd.test") {
		t.Fatalf("served certificate names %v", leaf.DNSNames)
	}
	return leaf.SerialNumber.String()
}
