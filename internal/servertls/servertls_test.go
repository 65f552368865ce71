package servertls_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestCAOnceAcrossReplicas: replicas that start at once on one database
// (several processes) end up with one CA; a restart keeps it.
func TestCAOnceAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	s1, dbURL := storetest.OpenURL(t)
	stores := []*store.Store{s1}
	for range 3 {
		s, err := store.Open(ctx, dbURL, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	cfg := config.Config{Addr: "0.0.0.0:8443", BaseURL: "https://patchd.example.com:8443"}
	setups := make([]*servertls.Setup, len(stores))
	errs := make([]error, len(stores))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			setups[i], errs[i] = servertls.New(ctx, cfg, s)
		})
	}
	close(start)
	wg.Wait()
	for i := range stores {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if setups[i].Mode != servertls.ModeOwnCA || setups[i].Pin != setups[0].Pin || setups[i].Pin != servertls.Pin(setups[i].CACert) {
			t.Fatalf("replica %d: mode %s pin %s, replica 0 pin %s", i, setups[i].Mode, setups[i].Pin, setups[0].Pin)
		}
	}
	// Two fresh CAs inserted at the same moment: both callers answer the winner.
	a, _ := servertls.NewCA(time.Now())
	b, _ := servertls.NewCA(time.Now())
	var ga, gb store.ServerCA
	var ea, eb error
	wg.Go(func() { ga, ea = stores[1].EnsureServerCA(ctx, a) })
	wg.Go(func() { gb, eb = stores[2].EnsureServerCA(ctx, b) })
	wg.Wait()
	if ea != nil || eb != nil || ga.SHA256 != setups[0].Pin || gb.SHA256 != setups[0].Pin {
		t.Fatalf("late inserts replaced the CA: %v %v %s %s", ea, eb, ga.SHA256, gb.SHA256)
	}
	// A restart keeps the CA; the pin is recorded for the admin commands.
	again, err := servertls.New(ctx, cfg, stores[3])
	if err != nil || again.Pin != setups[0].Pin {
		t.Fatalf("restart: %v %v", again, err)
	}
	if pin, err := stores[1].EnrollPin(ctx); err != nil || pin != setups[0].Pin {
		t.Fatalf("recorded pin %q %v", pin, err)
	}
	// CA key: ECDSA P-256, a CA, long-lived.
	ca, err := x509.ParseCertificate(setups[0].CACert)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA || ca.PublicKeyAlgorithm != x509.ECDSA || ca.NotAfter.Before(time.Now().Add(10*365*24*time.Hour)) {
		t.Fatalf("CA: isCA %v alg %v notAfter %v", ca.IsCA, ca.PublicKeyAlgorithm, ca.NotAfter)
	}
}

// TestLoopbackIsPlain: the default loopback listener stays plain HTTP and
// records no pin (a server that had one before drops it).
func TestLoopbackIsPlain(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	if _, err := servertls.New(ctx, config.Config{Addr: "10.9.8.7:8443"}, s); err != nil {
		t.Fatal(err)
	}
	setup, err := servertls.New(ctx, config.Config{Addr: "127.0.0.1:8080"}, s)
	if err != nil || setup.Mode != servertls.ModePlain || setup.TLS != nil || setup.Pin != "" {
		t.Fatalf("%+v %v", setup, err)
	}
	if pin, _ := s.EnrollPin(ctx); pin != "" {
		t.Fatalf("stale pin %q", pin)
	}
	for addr, plain := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:8080": true, "0.0.0.0:8443": false, ":8443": false, "192.0.2.2:443": false} {
		if got := (config.Config{Addr: addr}).Plain(); got != plain {
			t.Errorf("%s: plain %v", addr, got)
		}
	}
	if (config.Config{Addr: "127.0.0.1:8080", TLSSelf: true}).Plain() {
		t.Error("--tls-self on loopback is plain")
	}
}

// TestServerCertificate: the server certificate covers the names of
// --base-url and --addr and the host name, chains to the CA, and is
// renewed when a third of its life is left or the names change.
func TestServerCertificate(t *testing.T) {
	ca, err := servertls.NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	names := servertls.HostNames("https://patchd.example.com:8443", "192.0.2.10:8443")
	var mu sync.Mutex
	current := names
	iss, err := servertls.NewIssuer(ca, func() servertls.Names { mu.Lock(); defer mu.Unlock(); return current })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	iss.SetClock(func() time.Time { return now })
	c1, err := iss.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	leaf := c1.Leaf
	host, _ := os.Hostname()
	if !slices.Contains(leaf.DNSNames, "patchd.example.com") || !slices.Contains(leaf.DNSNames, "localhost") ||
		(host != "" && !slices.Contains(leaf.DNSNames, host)) {
		t.Fatalf("DNS names %v", leaf.DNSNames)
	}
	if !slices.ContainsFunc(leaf.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("192.0.2.10")) }) {
		t.Fatalf("IPs %v", leaf.IPAddresses)
	}
	pool := x509.NewCertPool()
	blk, _ := pem.Decode([]byte(ca.CertPEM))
	caCert, _ := x509.ParseCertificate(blk.Bytes)
	pool.AddCert(caCert)
	for _, name := range []string{"patchd.example.com", "192.0.2.10", "localhost", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if c, _ := iss.Certificate(); c != c1 {
		t.Fatal("a new certificate without a reason")
	}
	// Two thirds of its life later: renewed.
	now = now.Add(servertls.LeafLifetime*2/3 + time.Hour)
	c2, err := iss.Certificate()
	if err != nil || c2 == c1 || !c2.Leaf.NotAfter.After(leaf.NotAfter) {
		t.Fatalf("not renewed: %v", err)
	}
	// A new name (a minute later, when names are read again): re-issued.
	mu.Lock()
	current.DNS = append(slices.Clone(current.DNS), "patchd-new.example.com")
	mu.Unlock()
	now = now.Add(2 * time.Minute)
	c3, err := iss.Certificate()
	if err != nil || c3 == c2 || !slices.Contains(c3.Leaf.DNSNames, "patchd-new.example.com") {
		t.Fatalf("not re-issued for the new name: %v", err)
	}
}

// TestHostNamesEveryAddress: listening on every address includes this
// machine's addresses.
func TestHostNamesEveryAddress(t *testing.T) {
	n := servertls.HostNames("https://0.0.0.0:8443", "0.0.0.0:8443")
	for _, ip := range n.IPs {
		if ip.IsUnspecified() {
			t.Fatalf("0.0.0.0 in %v", n.IPs)
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() &&
			!slices.ContainsFunc(n.IPs, func(ip net.IP) bool { return ip.Equal(ipn.IP) }) {
			t.Errorf("machine address %s missing from %v", ipn.IP, n.IPs)
		}
	}
}

// TestOperatorCertPin: with --tls-cert the pin is the last certificate of
// the chain: the issuing CA when the file includes it, else the leaf.
func TestOperatorCertPin(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	ca, _ := servertls.NewCA(time.Now())
	iss, err := servertls.NewIssuer(ca, func() servertls.Names { return servertls.HostNames("https://patchd.example.com", "0.0.0.0:443") })
	if err != nil {
		t.Fatal(err)
	}
	c, err := iss.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := writeKey(t, dir, c)
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	chainPEM := append(slices.Clone(leafPEM), ca.CertPEM...)
	for name, tc := range map[string]struct {
		pem []byte
		pin string
	}{
		"chain":     {chainPEM, ca.SHA256},
		"leaf only": {leafPEM, servertls.Pin(c.Certificate[0])},
	} {
		f := filepath.Join(dir, "cert.pem")
		if err := os.WriteFile(f, tc.pem, 0o600); err != nil {
			t.Fatal(err)
		}
		setup, err := servertls.New(ctx, config.Config{Addr: "0.0.0.0:443", TLSCert: f, TLSKey: key}, s)
		if err != nil {
			t.Fatal(err)
		}
		if setup.Mode != servertls.ModeOperator || setup.Pin != tc.pin || servertls.Pin(setup.CACert) != tc.pin {
			t.Errorf("%s: mode %s pin %s, want %s", name, setup.Mode, setup.Pin, tc.pin)
		}
		if pin, _ := s.EnrollPin(ctx); pin != tc.pin {
			t.Errorf("%s: recorded pin %s", name, pin)
		}
	}
	// A chain this machine trusts needs no pin.
	pool := x509.NewCertPool()
	blk, _ := pem.Decode([]byte(ca.CertPEM))
	caCert, _ := x509.ParseCertificate(blk.Bytes)
	pool.AddCert(caCert)
	if !servertls.PubliclyTrusted(c.Leaf, nil, pool) || servertls.PubliclyTrusted(c.Leaf, nil, x509.NewCertPool()) {
		t.Error("PubliclyTrusted")
	}
}

// TestTLSProxy: behind a TLS proxy the server speaks plain HTTP on any
// address; tokens pin the last certificate of --agent-ca, or nothing.
func TestTLSProxy(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	setup, err := servertls.New(ctx, config.Config{Addr: "0.0.0.0:8080", TLSProxy: true, BaseURL: "https://patch.example.com"}, s)
	if err != nil || setup.Mode != servertls.ModeProxy || setup.TLS != nil || setup.Pin != "" || setup.CACert != nil {
		t.Fatalf("%+v %v", setup, err)
	}
	ca, _ := servertls.NewCA(time.Now())
	other, _ := servertls.NewCA(time.Now())
	f := filepath.Join(t.TempDir(), "agent-ca.pem")
	if err := os.WriteFile(f, []byte(other.CertPEM+ca.CertPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	setup, err = servertls.New(ctx, config.Config{Addr: "0.0.0.0:8080", TLSProxy: true, AgentCA: f}, s)
	if err != nil || setup.Pin != ca.SHA256 || servertls.Pin(setup.CACert) != ca.SHA256 {
		t.Fatalf("%+v %v", setup, err)
	}
	if pin, _ := s.EnrollPin(ctx); pin != ca.SHA256 {
		t.Fatalf("recorded pin %q", pin)
	}
	if err := os.WriteFile(f, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := servertls.New(ctx, config.Config{Addr: "0.0.0.0:8080", TLSProxy: true, AgentCA: f}, s); err == nil {
		t.Fatal("--agent-ca without a certificate accepted")
	}
}
