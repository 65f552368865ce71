package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// What the agent trusts (docs/agents.md, "What the agent trusts and why"):
//   - a token with a pin ("<token>.<sha256>"): only a server whose chain
//     ends in the certificate with that SHA-256, fetched once from the
//     server at enrollment, checked against the pin, kept in the state;
//   - a token without a pin: the system's trusted authorities, plus the
//     --ca-file certificate when one is given (kept in the state too);
//   - plain http:// only to loopback, or anywhere when enrolled with
//     --insecure-http, which the state records and the server shows.

// CheckServerURL refuses what the agent must not talk to: anything but
// http(s), and plain HTTP to an address that is not loopback unless
// insecureHTTP was chosen.
func CheckServerURL(raw string, insecureHTTP bool) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--server must be an https:// address, got %q", raw)
	}
	if u.Scheme == "http" && !insecureHTTP && !IsLoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("refusing plain http:// to %s: anyone on the way could read and change what the server tells this agent to run; "+
			"use the server's https:// address, or pass --insecure-http to accept that risk (it is recorded and shown on the endpoint)", u.Host)
	}
	return u, nil
}

// IsLoopbackHost tells whether host is localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// insecureChannel tells whether the agent talks over plain HTTP across the
// network: what the server shows as the endpoint's insecureChannel.
func insecureChannel(u *url.URL) bool {
	return u.Scheme == "http" && !IsLoopbackHost(u.Hostname())
}

// certSHA256 is the pin of a certificate: lowercase hex SHA-256 of its DER.
func certSHA256(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// parseCertPEM reads the first certificate of a PEM text.
func parseCertPEM(b []byte) (*x509.Certificate, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, errors.New("no PEM certificate found")
		}
		if blk.Type == "CERTIFICATE" {
			return x509.ParseCertificate(blk.Bytes)
		}
	}
}

// fetchPinnedCA reads the server's CA certificate (GET /agent/v1/ca.pem)
// and accepts it only when its SHA-256 is the pin. The connection is not
// verified for this one read: nothing is sent, and what is read is
// checked against the pin, which came with the token out of band.
func fetchPinnedCA(ctx context.Context, server, pin string) (*x509.Certificate, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Proxy: http.ProxyFromEnvironment}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(server, "/")+agentproto.PathCA, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the server's CA certificate: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read the server's CA certificate: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server has no CA certificate to pin (%s %s), but the token pins one: is this the server the token was made for?", agentproto.PathCA, resp.Status)
	}
	cert, err := parseCertPEM(body)
	if err != nil {
		return nil, fmt.Errorf("the server's CA certificate: %w", err)
	}
	if got := certSHA256(cert.Raw); got != pin {
		return nil, fmt.Errorf("the server's CA certificate has SHA-256 %s, but the token pins %s: this is not the server the token was made for (or someone is in between); the token was not sent", got, pin)
	}
	return cert, nil
}

// HTTPClient is the client for every call to the server (check-in,
// inventory, results, downloads from it), trusting what the state says.
func (s *State) HTTPClient() (*http.Client, error) {
	tc, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}, nil
}

// tlsConfig answers nil for the system store.
func (s *State) tlsConfig() (*tls.Config, error) {
	if s.CAPEM == "" {
		return nil, nil
	}
	ca, err := parseCertPEM([]byte(s.CAPEM))
	if err != nil {
		return nil, fmt.Errorf("state: the trusted CA certificate: %w", err)
	}
	if s.CASHA256 != "" {
		if certSHA256(ca.Raw) != s.CASHA256 {
			return nil, errors.New("state: the stored CA certificate does not match the stored pin: enroll again")
		}
		return pinnedTLS(ca, s.CASHA256), nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pool.AddCert(ca)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// pinnedTLS trusts only chains that end in ca (whose SHA-256 is pin); the
// host name is still checked against the server certificate.
func pinnedTLS(ca *x509.Certificate, pin string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{
		RootCAs:    pool,
		MinVersion: tls.VersionTLS12,
		// The standard verification (with the pool of one) ran first; this
		// makes the pin explicit: every verified chain ends in it.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.VerifiedChains) == 0 {
				return errors.New("the server's certificate is not from the pinned CA")
			}
			for _, chain := range cs.VerifiedChains {
				if certSHA256(chain[len(chain)-1].Raw) != pin {
					return fmt.Errorf("the server's certificate chain does not end in the pinned CA %s", pin)
				}
			}
			return nil
		},
	}
}

// trustForEnroll decides what to trust at enrollment and fills the
// state's CASHA256 and CAPEM.
func trustForEnroll(ctx context.Context, st *State, u *url.URL, pin, caFile string) error {
	var fileCert *x509.Certificate
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		if fileCert, err = parseCertPEM(b); err != nil {
			return fmt.Errorf("--ca-file %s: %w", caFile, err)
		}
	}
	if u.Scheme != "https" {
		// Plain HTTP (loopback, or --insecure-http): no certificate to check.
		return nil
	}
	switch {
	case pin != "" && fileCert != nil:
		if got := certSHA256(fileCert.Raw); got != pin {
			return fmt.Errorf("--ca-file %s has SHA-256 %s, but the token pins %s", caFile, got, pin)
		}
		st.CASHA256, st.CAPEM = pin, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fileCert.Raw}))
	case pin != "":
		ca, err := fetchPinnedCA(ctx, u.String(), pin)
		if err != nil {
			return err
		}
		st.CASHA256, st.CAPEM = pin, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	case fileCert != nil:
		st.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fileCert.Raw}))
	}
	return nil
}
