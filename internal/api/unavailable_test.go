package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestDatabaseOutageAnswers503 takes the database away under a running
// server (PostgreSQL: the connections dropped and refused; SQLite: the
// pools closed) and checks that requests whose checks need it answer 503
// with Retry-After in the Error shape, never a field error a client would
// treat as final (they answered 422 "no such group" and "endpointIds: could
// not be checked"), and that nothing was written.
func TestDatabaseOutageAnswers503(t *testing.T) {
	t.Parallel()
	cut := storetest.OpenCut(t)
	e := apitest.NewOn(t, cut.Store)
	ctx := context.Background()
	w1 := e.Enroll("w1", "win-01", "windows")
	allID, err := e.Store.BuiltinGroupID(ctx, e.Org.ID, "all")
	if err != nil {
		t.Fatal(err)
	}
	// The token is issued and checked once while the database is up; the
	// server keeps it in memory, so the outage is met by the handlers.
	if _, err := e.Admin.ListAutomations(ctx); err != nil {
		t.Fatal(err)
	}
	token := tokenOf(t, e.Admin)
	// An agent whose secret the server has not checked yet.
	w2 := e.Enroll("w2", "win-02", "windows")

	cut.Cut()

	plain := &http.Client{Timeout: time.Minute}
	call := func(method, path string, body any) (*http.Response, map[string]any) {
		t.Helper()
		var rd bytes.Buffer
		if body != nil {
			json.NewEncoder(&rd).Encode(body)
		}
		req, _ := http.NewRequest(method, e.URL+path, &rd)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	base := func(extra map[string]any) map[string]any {
		b := map[string]any{"name": "Outage", "actionType": "REBOOT", "payload": map[string]any{"message": "x", "timeoutSeconds": 60},
			"scheduleKind": "RECURRING", "freq": "DAILY", "atTime": "23:30"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   any
	}{
		{"group target", "POST", "/api/v1/automations", base(map[string]any{"targetMode": "group", "groupId": allID})},
		{"endpoint targets", "POST", "/api/v1/automations", base(map[string]any{"targetMode": "endpoints", "endpointIds": []string{w1.ID}})},
		{"all endpoints", "POST", "/api/v1/automations", base(map[string]any{"targetMode": "all"})},
		{"ring", "POST", "/api/v1/automations", map[string]any{"name": "Rings", "actionType": "REBOOT", "kind": "RING",
			"payload": map[string]any{"message": "x", "timeoutSeconds": 60}, "startDate": "2030-01-01",
			"rings": []map[string]any{{"name": "pilot", "groupId": allID, "offsetDays": 0}}}},
		{"list", "GET", "/api/v1/automations", nil},
		{"endpoint", "GET", "/api/v1/endpoints/" + w1.ID, nil},
		{"action", "POST", "/api/v1/actions", map[string]any{"type": "REBOOT", "endpointIds": []string{w1.ID},
			"payload": map[string]any{"message": "x", "timeoutSeconds": 60}}},
	} {
		resp, out := call(c.method, c.path, c.body)
		if resp.StatusCode != http.StatusServiceUnavailable || out["error"] != "service_unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %s %s during the outage answered %d Retry-After %q %v; want 503 service_unavailable with Retry-After",
				c.name, c.method, c.path, resp.StatusCode, resp.Header.Get("Retry-After"), out)
		}
		if d, _ := out["error_description"].(string); strings.Contains(d, "store:") || strings.Contains(d, "sql") {
			t.Errorf("%s: the answer leaks the database error: %q", c.name, d)
		}
	}
	// The agent is told to come back, not that its secret is unknown.
	if a := e.Call("POST", agentproto.PathCheckin, w2.Secret, agentproto.CheckinRequest{AgentVersion: "1.0.0"}, false); a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" {
		t.Errorf("agent check-in during the outage: %d %s", a.Status, a.Body)
	}

	// Nothing was written.
	cut.Restore()
	s, err := store.Open(ctx, cut.URL, "", store.Options{MaxConns: 2, SkipMigrate: true, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListAutomations(ctx, e.Org.ID)
	if err != nil || len(list) != 0 {
		t.Fatalf("after the outage the organization holds %d automations (%v); want none", len(list), err)
	}
}

// TestRefusedConnectionsAnswer503 runs the server on a PostgreSQL database
// that then stops accepting connections (ALLOW_CONNECTIONS false, its
// sessions ended): every new connection fails with "FATAL: database … is
// not currently accepting connections" (SQLSTATE 55000, inside a connect
// error), which answered 500. A failure to connect is unavailability
// whatever the server's SQLSTATE: 503 with Retry-After in the Error shape.
func TestRefusedConnectionsAnswer503(t *testing.T) {
	t.Parallel()
	pg := os.Getenv(storetest.EnvPostgres)
	if pg == "" {
		t.Skip("PostgreSQL only (" + storetest.EnvPostgres + "): SQLite has no connections to refuse")
	}
	ctx := context.Background()
	adminDB, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adminDB.Close() }) // after the drop below
	var b [6]byte
	rand.Read(b[:])
	name := "patchd_refuse_" + hex.EncodeToString(b[:])
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop the test's database %s: %v", name, err)
		}
	})
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	s, err := store.Open(ctx, u.String(), "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := apitest.NewOn(t, s)
	token := tokenOf(t, e.Admin)
	if _, err := e.Admin.ListAutomations(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := adminDB.ExecContext(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := adminDB.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
		t.Fatal(err)
	}
	// The store meets the refusal as a connect error carrying SQLSTATE 55000.
	err = s.Ping(ctx)
	var connErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	for range 10 { // the pool's connections ended by the termination go first
		if errors.As(err, &connErr) {
			break
		}
		err = s.Ping(ctx)
	}
	if !errors.As(err, &connErr) || !errors.As(err, &pgErr) || pgErr.Code != "55000" {
		t.Fatalf("ping of a database refusing connections: %v; want a connect error with SQLSTATE 55000", err)
	}
	if !dberr.IsUnavailable(err) {
		t.Errorf("dberr.IsUnavailable(%v) = false", err)
	}

	body := `{"name":"Refused","actionType":"REBOOT","payload":{"message":"x","timeoutSeconds":60},"targetMode":"all","scheduleKind":"RECURRING","freq":"DAILY","atTime":"23:30"}`
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/automations", body},
		{"GET", "/api/v1/automations", ""},
		{"GET", "/api/v1/endpoints", ""},
	} {
		ans := rawCall(t, e, c.method, c.path, token, []byte(c.body))
		if ans.status != http.StatusServiceUnavailable || ans.code != "service_unavailable" || ans.desc == "" {
			t.Errorf("%s %s while the database refuses connections: %d %s; want 503 service_unavailable", c.method, c.path, ans.status, ans.body)
		}
	}
}
