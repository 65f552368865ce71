package apitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/store"
)

// Agent plays one agent against the test server through raw HTTP, so tests
// see every status the protocol answers.
type Agent struct {
	env      *Env
	T        testing.TB
	ID       string
	Secret   string
	Platform string
}

// Answer is a raw protocol answer.
type Answer struct {
	Status int
	Body   []byte
	Header http.Header
	// Close says the server closes the connection after the answer
	// (Go's client takes "Connection: close" out of Header).
	Close bool
}

// Error decodes the Error shape of the answer.
func (a Answer) Error() string {
	var e agentproto.Error
	json.Unmarshal(a.Body, &e)
	return e.Error
}

// Want marks t failed unless the answer's status is status.
func (a Answer) Want(t testing.TB, status int, what string) {
	t.Helper()
	if a.Status != status {
		t.Errorf("%s: %d %s", what, a.Status, a.Body)
	}
}

// Must stops t unless the answer's status is status.
func (a Answer) Must(t testing.TB, status int, what string) {
	t.Helper()
	if a.Status != status {
		t.Fatalf("%s: %d %s", what, a.Status, a.Body)
	}
}

// Decode decodes the answer into v.
func (a Answer) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Body, v); err != nil {
		t.Fatalf("apitest: decode %s: %v", a.Body, err)
	}
}

// Call makes a protocol call with a JSON body (gzip-compressed when gz).
func (e *Env) Call(method, path, secret string, body any, gz bool, header ...string) Answer {
	e.T.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				e.T.Fatal(err)
			}
		}
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(b)
			zw.Close()
			b = buf.Bytes()
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Answer{Status: resp.StatusCode, Body: b, Header: resp.Header, Close: resp.Close}
}

// Enroll enrolls an agent with the Env's enrollment token.
func (e *Env) Enroll(machineUID, hostname, platform string) *Agent {
	e.T.Helper()
	ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: e.EnrollToken, MachineUID: machineUID,
		Hostname: hostname, Platform: platform, OS: "Test OS", OSVersion: "1", Arch: "amd64", AgentVersion: "1.0.0"}, false)
	if ans.Status != http.StatusOK {
		e.T.Fatalf("apitest: enroll: %d %s", ans.Status, ans.Body)
	}
	var r agentproto.EnrollResponse
	ans.Decode(e.T, &r)
	return &Agent{env: e, T: e.T, ID: r.EndpointID, Secret: r.AgentSecret, Platform: platform}
}

// EnrollSample enrolls an agent as Enroll does and stores Sample(hostname,
// platform) as its inventory.
func (e *Env) EnrollSample(machineUID, hostname, platform string) *Agent {
	e.T.Helper()
	a := e.Enroll(machineUID, hostname, platform)
	a.MustInventory(Sample(hostname, platform))
	return a
}

// Checkin checks in with the given long-poll wait.
func (a *Agent) Checkin(wait int, req agentproto.CheckinRequest) (agentproto.CheckinResponse, Answer) {
	a.T.Helper()
	ans := a.env.Call(http.MethodPost, fmt.Sprintf("%s?wait=%d", agentproto.PathCheckin, wait), a.Secret, req, false)
	var r agentproto.CheckinResponse
	if ans.Status == http.StatusOK {
		ans.Decode(a.T, &r)
	}
	return r, ans
}

// Inventory sends an inventory (gzip-compressed) with its hash.
func (a *Agent) Inventory(doc agentproto.Inventory, hash string) Answer {
	a.T.Helper()
	return a.env.Call(http.MethodPut, agentproto.PathInventory, a.Secret, doc, true, agentproto.HeaderInventoryHash, hash)
}

// MustInventory sends an inventory and fails the test unless it is stored.
func (a *Agent) MustInventory(doc agentproto.Inventory) {
	a.T.Helper()
	a.Inventory(doc, fmt.Sprintf("h%d", time.Now().UnixNano())).Must(a.T, http.StatusOK, "apitest: inventory")
}

// Stopping says the agent stops (POST /agent/v1/stopping).
func (a *Agent) Stopping(reason string) Answer {
	a.T.Helper()
	return a.env.Call(http.MethodPost, agentproto.PathStopping, a.Secret, agentproto.StoppingReport{Reason: reason}, false)
}

// Status reports on a command.
func (a *Agent) Status(commandID, status, result string, exitCode *int) Answer {
	a.T.Helper()
	return a.env.Call(http.MethodPost, fmt.Sprintf(agentproto.PathCommandStatus, commandID), a.Secret,
		agentproto.CommandStatus{Status: status, Result: result, ExitCode: exitCode, At: time.Now()}, false)
}

// Queue creates a run with one command per endpoint, as an action would,
// and wakes the agents.
func (e *Env) Queue(org store.Org, actionType string, payload any, endpoints ...*Agent) store.CreatedRun {
	e.T.Helper()
	p, err := json.Marshal(payload)
	if err != nil {
		e.T.Fatal(err)
	}
	cmds := make([]store.NewCommand, len(endpoints))
	for i, ag := range endpoints {
		cmds[i] = store.NewCommand{EndpointID: ag.ID, EndpointName: ag.ID}
	}
	var run store.CreatedRun
	err = e.Store.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		run, err = tx.CreateRun(context.Background(), store.NewRun{OrgID: org.ID, Name: "test " + actionType, ActionType: actionType, Payload: p, CreatedBy: "test"}, cmds, time.Now())
		return err
	})
	if err != nil {
		e.T.Fatal(err)
	}
	e.Server.Presence().Queued(context.Background(), run.Endpoints)
	return run
}

// Sample is a small, valid inventory for a platform.
func Sample(hostname, platform string) agentproto.Inventory {
	str := func(s string) *string { return &s }
	f := func(v float64) *float64 { return &v }
	cores := 4
	doc := agentproto.Inventory{
		CollectedAt: time.Now().UTC(),
		System: agentproto.System{Hostname: hostname, OS: str("Test OS"), OSVersion: str("1.0"), OSBuild: str("100"), Arch: "amd64",
			Type: "workstation", Manufacturer: str("Dell Inc."), Model: str("OptiPlex 7090"), SerialNumber: str("SN-" + hostname),
			CPU: str("Intel(R) Core(TM) i7"), Cores: &cores, RAMGB: f(16), MACAddresses: []string{"00:11:22:33:44:55"}, TimeZone: str("UTC")},
		Disks: []agentproto.Disk{{Drive: "C:", SizeGB: f(256), FreeGB: f(100.5)}},
		Software: []agentproto.Software{
			{Name: "Google Chrome", Version: str("131.0.6778.86"), Publisher: str("Google LLC")},
			{Name: "Mozilla Firefox", Version: str("132.0"), Publisher: str("Mozilla")},
			{Name: "7-Zip 24.08 (x64)", Version: str("24.08"), Publisher: str("Igor Pavlov")},
		},
		Updates: []agentproto.Update{
			{Title: "2026-11 Cumulative Update for Windows 11 (KB5048685)", KB: str("KB5048685"), Severity: str("Critical"),
				Source: "OS - Mandatory", Categories: []string{"Security Updates"}, RebootRequired: true},
			{Title: "Mozilla Firefox", WingetID: str("Mozilla.Firefox"), Source: "Applications", InstalledVersion: str("132.0"),
				LatestVersion: str("133.0.3"), Categories: []string{"Application Updates"}},
		},
		Datasets: map[string][]map[string]any{"services": {{"name": "Spooler", "state": "running", "startMode": "auto"}}},
	}
	if platform == "linux" {
		doc.Disks = []agentproto.Disk{{Drive: "/", SizeGB: f(100), FreeGB: f(42.5)}}
		doc.Updates = []agentproto.Update{{Title: "openssl 3.0.15-1~deb12u1", PackageName: str("openssl"), Distro: str("debian"),
			InstalledVersion: str("3.0.14-1~deb12u2"), LatestVersion: str("3.0.15-1~deb12u1"), Severity: str("Important"), Source: "OS - Mandatory"}}
	}
	return doc
}
