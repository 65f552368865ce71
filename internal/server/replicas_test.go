package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// replica is one patchd serve on the shared database.
type replica struct {
	srv *server.Server
	url string
}

// replicasOnPostgres skips a test of several replicas unless PostgreSQL is
// given, and silences the replicas' logs unless PATCHD_TEST_LOG is set.
func replicasOnPostgres(t *testing.T) {
	t.Helper()
	if os.Getenv(storetest.EnvPostgres) == "" {
		t.Skip("needs PostgreSQL: set " + storetest.EnvPostgres)
	}
	if os.Getenv("PATCHD_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
}

// acmeOps creates the organization Acme (Europe/Berlin) with a role "ops"
// of every permission and an API credential of that role, and answers the three.
func acmeOps(t *testing.T, s *store.Store) (store.Org, admin.RoleOut, admin.NewCredential) {
	t.Helper()
	ctx := context.Background()
	org, err := admin.CreateOrg(ctx, s, "Acme", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	role, err := admin.CreateRole(ctx, s, org.ID, "ops", perm.All.String())
	if err != nil {
		t.Fatal(err)
	}
	cred, err := admin.CreateCredential(ctx, s, "test", org.ID, "ops", role.ID)
	if err != nil {
		t.Fatal(err)
	}
	return org, role, cred
}

func startReplica(t *testing.T, s *store.Store) replica {
	t.Helper()
	cfg := config.Config{CheckinInterval: 60 * time.Second, SchedulerInterval: 100 * time.Millisecond}
	srv := server.New(cfg, s)
	ts := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunWorkers(ctx); close(done) }()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		<-done
	})
	return replica{srv: srv, url: ts.URL}
}

func agentCall(t *testing.T, base, method, path, secret string, body any, header ...string) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// Two patchd serve replicas on one PostgreSQL database: every due slot
// fires exactly once, and a command queued through one replica wakes an
// agent long-polling the other.
func TestTwoReplicas(t *testing.T) {
	replicasOnPostgres(t)
	ctx := context.Background()
	s1, url := storetest.OpenURL(t)
	s2, err := store.Open(ctx, url, "", store.Options{MaxConns: 8, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	a, b := startReplica(t, s1), startReplica(t, s2)

	org, _, cred := acmeOps(t, s1)
	viaA := client.New(a.url, cred.ClientID, cred.ClientSecret)
	tok, err := admin.CreateEnrollToken(ctx, s1, "test", org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}

	// An agent enrolls through A and long-polls B.
	code, body := agentCall(t, a.url, "POST", agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: tok.Token, MachineUID: "m1",
		Hostname: "win-01", Platform: "windows", OS: "Windows 11", OSVersion: "23H2", Arch: "amd64", AgentVersion: "1.0.0"})
	if code != 200 {
		t.Fatalf("enroll: %d %s", code, body)
	}
	var en agentproto.EnrollResponse
	json.Unmarshal(body, &en)
	if code, body := agentCall(t, b.url, "PUT", agentproto.PathInventory, en.AgentSecret, apitest.Sample("win-01", "windows"),
		agentproto.HeaderInventoryHash, "h1"); code != 200 {
		t.Fatalf("inventory: %d %s", code, body)
	}
	for round := range 5 {
		got := make(chan agentproto.CheckinResponse, 1)
		go func() {
			_, body := agentCall(t, b.url, "POST", agentproto.PathCheckin+"?wait=60", en.AgentSecret, agentproto.CheckinRequest{InventoryHash: "h1"})
			var r agentproto.CheckinResponse
			json.Unmarshal(body, &r)
			got <- r
		}()
		for deadline := time.Now().Add(time.Minute); !b.srv.Presence().Polling(en.EndpointID); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the poll is not held on B", round)
			}
		}
		sent := time.Now()
		started, err := viaA.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{en.EndpointID}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got:
			if len(r.Commands) != 1 || r.Commands[0].RunID != started.RunID {
				t.Fatalf("round %d: %+v", round, r)
			}
			// A poll that ran out its wait answers without commands: the
			// command proves B woke it. How fast is a figure, not a test.
			t.Logf("round %d: command queued on A reached the agent polling B in %s", round, time.Since(sent))
			agentCall(t, b.url, "POST", fmt.Sprintf(agentproto.PathCommandStatus, r.Commands[0].ID), en.AgentSecret,
				agentproto.CommandStatus{Status: "SUCCESS", At: time.Now()})
		case <-time.After(90 * time.Second):
			t.Fatalf("round %d: no answer to the long poll", round)
		}
	}

	// Many slots due over a few seconds, with both replicas' schedulers
	// polling every 100 ms: each fires exactly once.
	const slots = 60
	base := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	ids := make([]string, slots)
	for i := range slots {
		at := base.Add(time.Duration(i%6) * time.Second)
		c, err := viaA.CreateAutomation(ctx, apiv1.AutomationBody{Name: fmt.Sprintf("slot %02d", i), ActionType: "RUN_SCRIPT",
			TargetMode: ptr("endpoints"), EndpointIDs: []string{en.EndpointID}, ScheduleKind: ptr("ONCE"), RunAt: ptr(at.Format(time.RFC3339)),
			Payload: json.RawMessage(`{"script":"true","language":"sh"}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.Automation.ID
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := viaA.ListAutomations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending := 0
		for _, au := range list.Items {
			if au.LastRunAt == nil {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots did not fire", pending)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // give a double fire the chance to show
	for i, id := range ids {
		runs, err := viaA.ListRuns(ctx, client.RunQuery{AutomationID: id})
		if err != nil {
			t.Fatal(err)
		}
		if runs.Total != 1 {
			t.Fatalf("slot %d fired %d times", i, runs.Total)
		}
	}
}

func ptr[T any](v T) *T { return &v }
