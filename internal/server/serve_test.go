package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store/storetest"
)

// serveConfig is patchd serve's configuration with its defaults, on a new
// database: SQLite in dataDir, or a fresh PostgreSQL schema.
func serveConfig(t *testing.T, dataDir string, args ...string) config.Config {
	t.Helper()
	db := ""
	if os.Getenv(storetest.EnvPostgres) != "" {
		db = storetest.URL(t)
	}
	cfg, err := config.ParseServe(append([]string{"--data", dataDir, "--db", db}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startWithToken starts the server of serveConfig on a free port and
// answers its configuration, it, its base URL and the enrollment token it printed; it is shut
// down when the test ends unless *stopped says the test stopped it.
func startWithToken(t *testing.T, stopped *bool) (config.Config, *server.Running, string, string) {
	t.Helper()
	cfg := serveConfig(t, t.TempDir(), "--addr", "127.0.0.1:0")
	var out bytes.Buffer
	run, err := server.Start(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !*stopped {
			shutdown(t, run)
		}
	})
	m := enrollToken.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no enrollment token in %q", out.String())
	}
	return cfg, run, "http://" + run.Addr().String(), m[1]
}

func shutdown(t *testing.T, run *server.Running) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// tables counts the tables of the test's database.
func tables(t *testing.T, cfg config.Config) int {
	t.Helper()
	if cfg.DB == "" {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "patchd.db")); err == nil {
			return 1
		}
		return 0
	}
	db, err := sql.Open("pgx", cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTakenPortCreatesNothing: a first start that cannot bind its port
// fails before the database is created, so the next start is the first and
// prints the Administrator credential and the enrollment token.
func TestTakenPortCreatesNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	cfg := serveConfig(t, dir, "--addr", taken.Addr().String())
	var out bytes.Buffer
	if run, err := server.Start(context.Background(), cfg, &out); err == nil || !strings.Contains(err.Error(), "listen") {
		if run != nil {
			shutdown(t, run)
		}
		t.Fatalf("start on a taken port: %v", err)
	}
	taken.Close()
	if out.Len() != 0 || tables(t, cfg) != 0 {
		t.Fatalf("the failed start printed %q / created the database", out.String())
	}
	if _, err := os.Stat(dir); cfg.DB == "" && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed start made the data folder: %v", err)
	}

	cfg.Addr = "127.0.0.1:0"
	run, err := server.Start(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, run)
	for _, want := range []string{"API client_id:       pdc_", "API client_secret:   pds_", "Enrollment token:    pde_"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the first good start did not print %q:\n%s", want, out.String())
		}
	}
}

var enrollToken = regexp.MustCompile(`Enrollment token:\s+(\S+)`)

// call makes an agent protocol call.
func call(t *testing.T, method, url, secret string, body any, header ...string) (*http.Response, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	req, err := http.NewRequest(method, url, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, got, err
}

// TestShutdownAnswersLongPolls: stopping the server answers the agents'
// long polls at once (no commands: the agent checks in again), so the
// shutdown does not wait them out. The long poll asks for the longest wait
// (60 s); the shutdown is given 45 s, far more than it needs, but less than
// the wait it would otherwise sit through.
func TestShutdownAnswersLongPolls(t *testing.T) {
	stopped := false
	_, run, base, token := startWithToken(t, &stopped)
	resp, body, err := call(t, http.MethodPost, base+agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: token, MachineUID: "stop-1",
		Hostname: "ws-stop", Platform: "windows", OS: "Test OS", OSVersion: "1", Arch: "amd64", AgentVersion: "1.0.0"})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("enroll: %v %s", err, body)
	}
	var enrolled agentproto.EnrollResponse
	json.Unmarshal(body, &enrolled)
	if resp, body, err = call(t, http.MethodPut, base+agentproto.PathInventory, enrolled.AgentSecret, apitest.Sample("ws-stop", "windows"),
		agentproto.HeaderInventoryHash, "h1"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("inventory: %v %s", err, body)
	}

	type answer struct {
		status int
		body   []byte
		err    error
	}
	polled := make(chan answer, 1)
	go func() {
		resp, body, err := call(t, http.MethodPost, fmt.Sprintf("%s%s?wait=%d", base, agentproto.PathCheckin, agentproto.MaxWaitSeconds), enrolled.AgentSecret,
			agentproto.CheckinRequest{InventoryHash: "h1", AgentVersion: "1.0.0"})
		a := answer{body: body, err: err}
		if resp != nil {
			a.status = resp.StatusCode
		}
		polled <- a
	}()
	deadline := time.Now().Add(time.Minute)
	for !run.Server().Presence().Polling(enrolled.EndpointID) {
		if time.Now().After(deadline) {
			t.Fatal("the check-in is not held as a long poll")
		}
		time.Sleep(5 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	stopped = true
	if err := run.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a long poll held: %v", err)
	}
	select {
	case a := <-polled:
		var r agentproto.CheckinResponse
		if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &r) != nil || r.Commands == nil || len(r.Commands) != 0 {
			t.Fatalf("the long poll's answer: %d %v %s", a.status, a.err, a.body)
		}
	case <-ctx.Done():
		t.Fatal("the long poll was not answered")
	}
}

// TestMetricsListenerAndToken: without a token /metrics is only on
// --metrics-addr; with one, it is on the main listener too, and both ask
// for it.
func TestMetricsListenerAndToken(t *testing.T) {
	const token = "metrics-token-0123456789"
	get := func(url, auth string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	for _, withToken := range []bool{false, true} {
		args := []string{"--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}
		if withToken {
			args = append(args, "--metrics-token", token)
		}
		run, err := server.Start(context.Background(), serveConfig(t, t.TempDir(), args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		main := "http://" + run.Addr().String() + "/metrics"
		side := "http://" + run.MetricsAddr().String() + "/metrics"
		if !withToken {
			if code, _, _ := get(main, ""); code != http.StatusNotFound {
				t.Errorf("/metrics on the main listener without a token configured: %d", code)
			}
			code, _, body := get(side, "")
			if code != http.StatusOK || !strings.Contains(body, "patchd_db_connections_open") || !strings.Contains(body, "patchd_agent_long_polls") {
				t.Errorf("--metrics-addr: %d %.300s", code, body)
			}
		} else {
			for _, url := range []string{main, side} {
				if code, challenge, body := get(url, ""); code != http.StatusUnauthorized || challenge != `Bearer realm="patchd metrics"` || !strings.Contains(body, `"error"`) {
					t.Errorf("%s without the token: %d %q %s", url, code, challenge, body)
				}
				if code, challenge, _ := get(url, "Bearer wrong-token-0123456789"); code != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) {
					t.Errorf("%s with a wrong token: %d %q", url, code, challenge)
				}
				if code, _, body := get(url, "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "patchd_http_requests_total") {
					t.Errorf("%s with the token: %d %.300s", url, code, body)
				}
			}
		}
		shutdown(t, run)
	}
}

// TestHSTSUnderTLS: Strict-Transport-Security is sent on answers over TLS
// only.
func TestHSTSUnderTLS(t *testing.T) {
	srv := server.New(config.Config{CheckinInterval: time.Minute}, storetest.Open(t))
	defer srv.Close()
	for _, tc := range []struct {
		ts   *httptest.Server
		want string
	}{{httptest.NewTLSServer(srv.Handler()), "max-age=31536000"}, {httptest.NewServer(srv.Handler()), ""}} {
		resp, err := tc.ts.Client().Get(tc.ts.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != tc.want {
			t.Errorf("%s: Strict-Transport-Security %q, want %q", tc.ts.URL, got, tc.want)
		}
		tc.ts.Close()
	}
}

// TestFirstSecretsFile: with --first-secrets-file the first start writes
// the Administrator credential and the enrollment token to that file (mode
// 0600) and only its name to standard output, which a service manager
// keeps in its journal; a second start writes nothing.
func TestFirstSecretsFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	secrets := filepath.Join(t.TempDir(), "first-start-secrets")
	cfg := serveConfig(t, dir, "--addr", "127.0.0.1:0", "--first-secrets-file", secrets)
	var out bytes.Buffer
	run, err := server.Start(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, run)
	b, err := os.ReadFile(secrets)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"API client_id:       pdc_", "API client_secret:   pds_", "Enrollment token:    pde_"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the secrets file lacks %q:\n%s", want, b)
		}
	}
	if st, err := os.Stat(secrets); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the secrets file: %v %v, want mode 0600", st.Mode(), err)
	}
	for _, secret := range []string{"pds_", "pde_"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("standard output holds a secret (%s…):\n%s", secret, out.String())
		}
	}
	if !strings.Contains(out.String(), secrets) {
		t.Errorf("standard output does not say where the secrets are:\n%s", out.String())
	}

	out.Reset()
	run, err = server.Start(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	shutdown(t, run)
	if strings.Contains(out.String(), "first start") {
		t.Errorf("the second start said %q", out.String())
	}
	if b2, _ := os.ReadFile(secrets); string(b2) != string(b) {
		t.Error("the second start changed the secrets file")
	}
}
