// Package apitest runs a real patchd server in the test process, on the
// engine storetest picks, and hands out API clients whose every answer from
// /api/ is validated against the OpenAPI document.
package apitest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/openapi"
)

// Env is a running server with one organization ready to use.
type Env struct {
	T      testing.TB
	Store  *store.Store
	Server *server.Server
	HTTP   *httptest.Server
	URL    string
	// Org is the organization the Admin client belongs to.
	Org store.Org
	// Admin holds every permission in Org.
	Admin *client.Client
	// HTTPClient validates every /api/ answer against the OpenAPI document.
	HTTPClient *http.Client
	// EnrollToken enrolls agents into Org ("<token>.<pin>" with WithOwnCA).
	EnrollToken string
	// TLS is the server's own CA with WithOwnCA, else nil (plain HTTP).
	TLS *servertls.Setup
}

// WithOwnCA serves HTTPS with the server's own CA (made in the test's
// database), as patchd serve does off loopback.
func WithOwnCA() Option {
	return func(c *config.Config) { c.TLSSelf, c.Addr = true, "127.0.0.1:0" }
}

// Option tunes New.
type Option func(*config.Config)

// New starts a server for t and stops it when t ends.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	return NewOn(t, storetest.Open(t), opts...)
}

// NewOn is New on a store the test opened itself (storetest.OpenCut, to
// take the database away under the server).
func NewOn(t testing.TB, s *store.Store, opts ...Option) *Env {
	t.Helper()
	quietLogs()
	cfg := config.Config{CheckinInterval: 60 * time.Second, AllowPrivateWebhooks: true}
	for _, o := range opts {
		o(&cfg)
	}
	srv := server.New(cfg, s)
	ts := httptest.NewUnstartedServer(srv.Handler())
	next := http.DefaultTransport
	var setup *servertls.Setup
	if cfg.TLSSelf {
		var err error
		if setup, err = servertls.New(context.Background(), cfg, s); err != nil {
			t.Fatal(err)
		}
		srv.UseTLS(setup)
		// httptest adds its own certificate when the configuration has
		// none, and Go prefers it to GetCertificate without SNI (a client
		// dialing 127.0.0.1): give it the issuer's.
		ts.TLS = setup.TLS.Clone()
		leaf, err := setup.Issuer.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		ts.TLS.Certificates = []tls.Certificate{*leaf}
		ts.StartTLS()
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(setup.CAPEM())
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		next = tr
	} else {
		ts.Start()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		cancel()
		<-done
	})
	e := &Env{T: t, Store: s, Server: srv, HTTP: ts, URL: ts.URL, TLS: setup}
	e.HTTPClient = &http.Client{Transport: &validating{t: t, next: next}, Timeout: 2 * time.Minute}
	e.Org = e.NewOrg("Acme")
	e.Admin = e.Client(e.Org, perm.All)
	tok, err := admin.CreateEnrollToken(context.Background(), s, "test", e.Org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.EnrollToken = tok.Token
	return e
}

// NewOrg creates another organization.
func (e *Env) NewOrg(name string) store.Org {
	e.T.Helper()
	o, err := admin.CreateOrg(context.Background(), e.Store, name, "UTC")
	if err != nil {
		e.T.Fatal(err)
	}
	return o
}

var logOnce sync.Once

// quietLogs sends the server's logs nowhere unless PATCHD_TEST_LOG is set:
// parallel tests would interleave them beyond reading.
func quietLogs() {
	logOnce.Do(func() {
		switch os.Getenv("PATCHD_TEST_LOG") {
		case "":
			slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
		case "debug":
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
		}
	})
}

var roleSeq sync.Map

// Credential creates an API credential in org whose role holds exactly perms.
func (e *Env) Credential(org store.Org, perms perm.Set) admin.NewCredential {
	e.T.Helper()
	ctx := context.Background()
	n, _ := roleSeq.LoadOrStore(org.ID+perms.String(), NewName())
	name := n.(string)
	roleName := "role-" + name
	r, err := e.Store.FindRole(ctx, org.ID, roleName)
	if err != nil {
		rr, err := admin.CreateRole(ctx, e.Store, org.ID, roleName, perms.String())
		if err != nil {
			e.T.Fatal(err)
		}
		r.ID = rr.ID
	}
	c, err := admin.CreateCredential(ctx, e.Store, "test", org.ID, "cred-"+NewName(), r.ID)
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// Client makes an API client of org with exactly perms.
func (e *Env) Client(org store.Org, perms perm.Set) *client.Client {
	e.T.Helper()
	_, c := e.CredentialClient(org, perms)
	return c
}

// CredentialClient makes an API credential in org whose role holds exactly
// perms, and a client that signs in with it: for a test that looks for
// the credential's name (the Audit Trail's actor) or its secret.
func (e *Env) CredentialClient(org store.Org, perms perm.Set, opts ...client.Option) (admin.NewCredential, *client.Client) {
	e.T.Helper()
	c := e.Credential(org, perms)
	return c, client.New(e.URL, c.ClientID, c.ClientSecret, append([]client.Option{client.WithHTTPClient(e.HTTPClient)}, opts...)...)
}

var nameSeq struct {
	sync.Mutex
	n int
}

// NewName returns a short name unique in the test binary.
func NewName() string {
	nameSeq.Lock()
	defer nameSeq.Unlock()
	nameSeq.n++
	return "n" + itoa(nameSeq.n)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

func router() (routers.Router, error) {
	docOnce.Do(func() {
		// The document as served (GET /api/v1/openapi.json), not the YAML
		// it is made from: answers are held to what clients read.
		var served []byte
		served, docErr = openapi.JSON()
		if docErr != nil {
			return
		}
		var doc *openapi3.T
		doc, docErr = openapi3.NewLoader().LoadFromData(served)
		if docErr == nil {
			// Match paths on any host: the test server's address changes.
			doc.Servers = nil
			docRouter, docErr = legacy.NewRouter(doc)
		}
	})
	return docRouter, docErr
}

// validating is a transport that checks every answer under /api/ against
// the OpenAPI document and fails the test on a mismatch.
type validating struct {
	t    testing.TB
	next http.RoundTripper
}

func (v *validating) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/api/") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
		return resp, nil
	}
	r, err := router()
	if err != nil {
		v.t.Errorf("apitest: OpenAPI document: %v", err)
		return resp, nil
	}
	route, params, err := r.FindRoute(req)
	if err != nil {
		if resp.StatusCode != http.StatusNotFound {
			v.t.Errorf("apitest: %s %s answered %d but the OpenAPI document has no such operation: %v", req.Method, req.URL.Path, resp.StatusCode, err)
		}
		return resp, nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		v.t.Errorf("apitest: %s %s answered %d, which the OpenAPI document does not allow: %v\nbody: %.2000s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	return resp, nil
}
