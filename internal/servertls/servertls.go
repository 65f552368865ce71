// Package servertls decides how patchd serve speaks TLS and what agents
// pin: the operator's certificate (--tls-cert), a certificate from ACME
// (--acme-domain, cached in the database), or by default a certificate
// authority patchd makes for itself on first start, stored in the database
// so that every replica serves the same identity, and server certificates
// it issues from it for the server's names and addresses. Plain HTTP is
// left only to a loopback listener.
package servertls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// Mode is how the server speaks to clients.
type Mode string

const (
	ModePlain    Mode = "http"      // loopback listener, no TLS
	ModeOwnCA    Mode = "own-ca"    // the server's own CA
	ModeOperator Mode = "tls-cert"  // --tls-cert/--tls-key
	ModeACME     Mode = "acme"      // --acme-domain
	ModeProxy    Mode = "tls-proxy" // plain HTTP behind a TLS proxy (--tls-proxy)
)

// Lifetimes of what patchd issues itself. The CA lives long: agents pin
// it, and a new one means enrolling them again. Server certificates are
// short and renewed when a third of their life is left.
const (
	CALifetime   = 20 * 365 * 24 * time.Hour
	LeafLifetime = 90 * 24 * time.Hour
	renewBefore  = LeafLifetime / 3
	// namesEvery is how often the host's names and addresses are read
	// again (a new address gets a new certificate).
	namesEvery = time.Minute
)

// Setup is the server's TLS decision.
type Setup struct {
	Mode Mode
	// TLS is the listener's configuration; nil in ModePlain.
	TLS *tls.Config
	// Pin is the lowercase hex SHA-256 of CACert's DER, which enrollment
	// tokens carry; empty when agents use their system store (ACME, a
	// publicly trusted --tls-cert) or in ModePlain.
	Pin string
	// CACert is the DER of the certificate agents pin, served at
	// /agent/v1/ca.pem; nil when there is none.
	CACert []byte
	// Issuer issues and renews the server certificate in ModeOwnCA.
	Issuer *Issuer
	// ACME is the certificate manager in ModeACME.
	ACME *autocert.Manager
}

// CAPEM answers the pinned certificate in PEM, or nil.
func (s *Setup) CAPEM() []byte {
	if s == nil || s.CACert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.CACert})
}

// CipherSuites are the TLS 1.2 suites the server accepts: forward-secret
// key exchange (ECDHE) with an AEAD cipher. Go's defaults also take the
// CBC suites with HMAC-SHA1 (TLS_ECDHE_*_WITH_AES_*_CBC_SHA), which
// scanners and the Mozilla "intermediate" profile reject (Lucky13-style
// padding oracles, SHA-1). TLS 1.3's suites are all AEAD and not
// configurable.
var CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Pin answers the pin of a certificate: the lowercase hex SHA-256 of its DER.
func Pin(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// New decides the server's TLS from its configuration and records the pin
// in the database for the admin commands and the console.
func New(ctx context.Context, cfg config.Config, s *store.Store) (*Setup, error) {
	var setup *Setup
	var err error
	switch {
	case cfg.TLSProxy:
		setup, err = proxySetup(cfg.AgentCA)
	case cfg.TLSCert != "":
		setup, err = operatorCert(cfg.TLSCert, cfg.TLSKey)
	case len(cfg.ACMEDomains) > 0:
		setup, err = acmeSetup(cfg, s)
	case cfg.Plain():
		setup = &Setup{Mode: ModePlain}
	default:
		setup, err = ownCA(ctx, cfg, s)
	}
	if err != nil {
		return nil, err
	}
	if setup.TLS != nil {
		setup.TLS.MinVersion = tls.VersionTLS12
		setup.TLS.CipherSuites = CipherSuites
	}
	if err := s.PutTLSData(ctx, store.TLSPinName, []byte(setup.Pin)); err != nil {
		return nil, err
	}
	return setup, nil
}

// operatorCert serves the operator's certificate. The pin is the last
// certificate of the chain (the issuing CA when the file includes it, else
// the leaf), unless the chain is trusted by this machine's system store:
// then agents use theirs and tokens carry no pin.
func operatorCert(certFile, keyFile string) (*Setup, error) {
	kp, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	leaf, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	last := kp.Certificate[len(kp.Certificate)-1]
	setup := &Setup{Mode: ModeOperator, CACert: last, Pin: Pin(last),
		TLS: &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}}
	if PubliclyTrusted(leaf, kp.Certificate[1:], nil) {
		setup.Pin = ""
	}
	return setup, nil
}

// proxySetup: a proxy in front holds the certificate; agents pin the last
// certificate of --agent-ca, or nothing.
func proxySetup(agentCA string) (*Setup, error) {
	setup := &Setup{Mode: ModeProxy}
	if agentCA == "" {
		return setup, nil
	}
	b, err := os.ReadFile(agentCA)
	if err != nil {
		return nil, fmt.Errorf("--agent-ca: %w", err)
	}
	var last []byte
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
				return nil, fmt.Errorf("--agent-ca: %w", err)
			}
			last = blk.Bytes
		}
	}
	if last == nil {
		return nil, fmt.Errorf("--agent-ca %s: no PEM certificate", agentCA)
	}
	setup.CACert, setup.Pin = last, Pin(last)
	return setup, nil
}

// PubliclyTrusted tells whether the chain verifies against roots (nil:
// the system store), for any name: whether agents can trust it without a pin.
func PubliclyTrusted(leaf *x509.Certificate, rest [][]byte, roots *x509.CertPool) bool {
	if roots == nil {
		var err error
		if roots, err = x509.SystemCertPool(); err != nil {
			return false
		}
	}
	inter := x509.NewCertPool()
	for _, der := range rest {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err == nil
}

// acmeSetup gets certificates for the --acme-domain names from the ACME
// directory (tls-alpn-01 on the listener, which must be reachable on port
// 443 of those names), cached in the database so that replicas share the
// account and the certificates.
func acmeSetup(cfg config.Config, s *store.Store) (*Setup, error) {
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      dbCache{s},
		HostPolicy: autocert.HostWhitelist(cfg.ACMEDomains...),
		Email:      cfg.ACMEEmail,
	}
	if cfg.ACMEDirectory != "" || cfg.ACMEHTTP != nil {
		m.Client = &acme.Client{DirectoryURL: cfg.ACMEDirectory, HTTPClient: cfg.ACMEHTTP}
		if m.Client.DirectoryURL == "" {
			m.Client.DirectoryURL = autocert.DefaultACMEDirectory
		}
	}
	t := m.TLSConfig()
	t.MinVersion = tls.VersionTLS12
	return &Setup{Mode: ModeACME, TLS: t, ACME: m}, nil
}

// dbCache is autocert's cache in the server_tls table.
type dbCache struct{ s *store.Store }

func (c dbCache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.s.TLSData(ctx, store.ACMEPrefix+key)
	if errors.Is(err, dberr.ErrNotFound) {
		return nil, autocert.ErrCacheMiss
	}
	return b, err
}

func (c dbCache) Put(ctx context.Context, key string, data []byte) error {
	return c.s.PutTLSData(ctx, store.ACMEPrefix+key, data)
}

func (c dbCache) Delete(ctx context.Context, key string) error {
	return c.s.DeleteTLSData(ctx, store.ACMEPrefix+key)
}

// ownCA loads the server's CA from the database, creating it on the very
// first start (race-free across replicas), and issues server certificates
// from it.
func ownCA(ctx context.Context, cfg config.Config, s *store.Store) (*Setup, error) {
	ca, err := EnsureCA(ctx, s)
	if err != nil {
		return nil, err
	}
	iss, err := NewIssuer(ca, func() Names { return HostNames(cfg.BaseURL, cfg.Addr) })
	if err != nil {
		return nil, err
	}
	if _, err := iss.Certificate(); err != nil {
		return nil, err
	}
	return &Setup{Mode: ModeOwnCA, Pin: ca.SHA256, CACert: iss.caCert.Raw, Issuer: iss,
		TLS: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return iss.Certificate() },
			MinVersion: tls.VersionTLS12}}, nil
}

// EnsureCA answers the server's CA, making and storing one when the
// database has none (the first replica's wins).
func EnsureCA(ctx context.Context, s *store.Store) (store.ServerCA, error) {
	ca, err := s.ServerCA(ctx)
	if err == nil || !errors.Is(err, dberr.ErrNotFound) {
		return ca, err
	}
	fresh, err := NewCA(time.Now())
	if err != nil {
		return store.ServerCA{}, err
	}
	return s.EnsureServerCA(ctx, fresh)
}

// NewCA makes a certificate authority: ECDSA P-256, valid CALifetime.
func NewCA(now time.Time) (store.ServerCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return store.ServerCA{}, fmt.Errorf("make CA key: %w", err)
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"patchd"}, CommonName: "patchd CA " + host + " " + now.UTC().Format("2006-01-02")},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return store.ServerCA{}, fmt.Errorf("make CA certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return store.ServerCA{}, fmt.Errorf("encode CA key: %w", err)
	}
	return store.ServerCA{
		CertPEM:   string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
		SHA256:    Pin(der),
		CreatedAt: now.UTC().Truncate(time.Millisecond),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// Names are the DNS names and IP addresses a server certificate covers.
type Names struct {
	DNS []string
	IPs []net.IP
}

func (n Names) key() string {
	parts := slices.Clone(n.DNS)
	for _, ip := range n.IPs {
		parts = append(parts, ip.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// HostNames are the names of a server listening on addr and reached at
// baseURL: the host of each, this machine's host name, localhost and the
// loopback addresses, and, when addr listens on every address (0.0.0.0,
// ::, or no host), this machine's unicast addresses.
func HostNames(baseURL, addr string) Names {
	var n Names
	seen := map[string]bool{}
	add := func(h string) {
		h = strings.Trim(strings.TrimSpace(h), "[]")
		if h == "" || seen[strings.ToLower(h)] {
			return
		}
		seen[strings.ToLower(h)] = true
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				n.IPs = append(n.IPs, ip)
			}
			return
		}
		n.DNS = append(n.DNS, strings.ToLower(h))
	}
	if u, err := url.Parse(baseURL); err == nil {
		add(u.Hostname())
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	add(host)
	if h, err := os.Hostname(); err == nil {
		add(h)
	}
	add("localhost")
	add("127.0.0.1")
	add("::1")
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "" || (ip != nil && ip.IsUnspecified()) {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && (ipn.IP.IsGlobalUnicast() || ipn.IP.IsLoopback()) {
					add(ipn.IP.String())
				}
			}
		}
	}
	return n
}

// Issuer issues the server certificate from the CA and renews it: when a
// third of its life is left, and when the names change.
type Issuer struct {
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	names  func() Names
	now    func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	leaf    *x509.Certificate
	key     string    // the names of cert
	checked time.Time // when the names were last read
}

// NewIssuer parses the CA; names is read again every minute.
func NewIssuer(ca store.ServerCA, names func() Names) (*Issuer, error) {
	cb, _ := pem.Decode([]byte(ca.CertPEM))
	kb, _ := pem.Decode([]byte(ca.KeyPEM))
	if cb == nil || kb == nil {
		return nil, errors.New("server CA: stored certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("server CA: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("server CA key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("server CA key: not ECDSA")
	}
	return &Issuer{caCert: cert, caKey: key, names: names, now: time.Now}, nil
}

// SetClock replaces the issuer's clock (tests of renewal).
func (i *Issuer) SetClock(now func() time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.now = now
}

// Certificate answers the current server certificate, issuing a new one
// when none is valid for long enough or the names changed.
func (i *Issuer) Certificate() (*tls.Certificate, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := i.now()
	if i.cert != nil && now.Before(i.leaf.NotAfter.Add(-renewBefore)) && now.Sub(i.checked) < namesEvery {
		return i.cert, nil
	}
	names := i.names()
	i.checked = now
	if i.cert != nil && now.Before(i.leaf.NotAfter.Add(-renewBefore)) && names.key() == i.key {
		return i.cert, nil
	}
	c, leaf, err := i.issue(names, now)
	if err != nil {
		if i.cert != nil && now.Before(i.leaf.NotAfter) {
			return i.cert, nil // keep serving the valid one
		}
		return nil, err
	}
	i.cert, i.leaf, i.key = c, leaf, names.key()
	return c, nil
}

func (i *Issuer) issue(names Names, now time.Time) (*tls.Certificate, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("make server key: %w", err)
	}
	cn := "patchd"
	if len(names.DNS) > 0 {
		cn = names.DNS[0]
	}
	notAfter := now.Add(LeafLifetime)
	if notAfter.After(i.caCert.NotAfter) {
		notAfter = i.caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"patchd"}, CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names.DNS,
		IPAddresses:  names.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.caCert, &key.PublicKey, i.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("issue server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("issue server certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, i.caCert.Raw}, PrivateKey: key, Leaf: leaf}, leaf, nil
}

// CAHandler serves the pinned certificate in PEM (GET /agent/v1/ca.pem,
// no authentication: it is public, and agents check it against the pin
// they were given). Without one it answers 404.
func (s *Setup) CAHandler() http.Handler {
	body := s.CAPEM()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"not_found","error_description":"this server has no certificate for agents to pin: agents check its certificate against their system store (or it speaks plain HTTP on loopback)"}`))
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(body)
	})
}
