package sim

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// AgentVersion is the agent version simulated endpoints report.
const AgentVersion = "1.0.0"

// client speaks the agent protocol for all simulated agents through one
// shared transport.
type client struct {
	base string
	http *http.Client
}

// newTransport returns a transport sized for conns simultaneous agents: every
// agent may hold a long poll open, so idle connections must be kept for all
// of them or each poll would pay a new handshake. HTTP/2 is off: real agents
// each have their own connection, and one multiplexed connection would hit
// the server's stream limit.
func newTransport(conns int, tc *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		// Shorter than the server's idle timeout (120 s), so an agent never
		// sends a check-in on a connection the server is closing (a POST is
		// not retried: it would fail with EOF).
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tc,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:    true,
	}
}

// simTLS is the simulated agents' TLS: any certificate with --insecure;
// with a token that pins the server's CA ("<token>.<sha256>", as real
// agents take it), only a chain that the pinned certificate, sent by the
// server, verifies for the server's name; else the system store.
func simTLS(insecure bool, token string) *tls.Config {
	if insecure {
		return &tls.Config{InsecureSkipVerify: true}
	}
	_, pin := agentproto.SplitEnrollToken(token)
	if pin == "" {
		return &tls.Config{}
	}
	return &tls.Config{
		// The standard verification needs the CA in a pool; the pinned CA
		// comes in the server's chain, so it is checked here instead.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("sim: the server sent no certificate")
			}
			pool, inter := x509.NewCertPool(), x509.NewCertPool()
			found := false
			for _, c := range cs.PeerCertificates {
				sum := sha256.Sum256(c.Raw)
				if hex.EncodeToString(sum[:]) == pin {
					pool.AddCert(c)
					found = true
				} else {
					inter.AddCert(c)
				}
			}
			if !found {
				return fmt.Errorf("sim: the server's chain lacks the pinned CA %s", pin)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: cs.ServerName})
			return err
		},
	}
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// gzipBytes compresses b once, with a pooled writer.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b) / 5)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b)
	zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

// call sends body (JSON, gzip-compressed when gz) with extra headers given
// as name, value pairs, and decodes a 2xx answer into out. Any other status
// is a *statusError.
func (c *client) call(ctx context.Context, method, path, secret string, body []byte, gz bool, out any, headers ...string) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "patchd-sim/"+AgentVersion)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &statusError{code: resp.StatusCode, body: strings.TrimSpace(string(data[:min(len(data), 300)]))}
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
			se.retryAfter = time.Duration(n) * time.Second
		}
		return se
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%w: %s %s: %v", errDecode, method, path, err)
		}
	}
	return nil
}

func (c *client) callJSON(ctx context.Context, method, path, secret string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.call(ctx, method, path, secret, body, false, out)
}
