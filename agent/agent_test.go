package agent

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/agentsvc"
)

// fakeServer implements the four calls of the agent protocol, minimally,
// in the process.
type fakeServer struct {
	t *testing.T

	mu          sync.Mutex
	token       string
	secret      string
	endpointID  string
	pending     []agentproto.Command
	statuses    map[string][]agentproto.CommandStatus
	inventories []agentproto.Inventory
	invHash     string
	checkins    int
	uninstall   bool // answer the next check-in with uninstall: true
	revoked     bool // answer everything with 401
	down        atomic.Bool
	statusDown  atomic.Bool
	refused     atomic.Int32 // requests dropped while down
	gzipSeen    bool
	machineUIDs []string // of every enrollment
	// failures: the updateFailure of every check-in that had one.
	failures   []agentproto.UpdateFailure
	lastEnroll agentproto.EnrollRequest
	// longPoll: a check-in with wait > 0 and nothing to hand out is held
	// until a command is queued (or the agent hangs up), however long.
	longPoll bool
	wake     chan struct{} // closed when a command is queued
	// inventoriesAt: how many inventories the server had when it got
	// each status (command id + " " + status).
	inventoriesAt map[string]int
	// refreshSeconds is sent in check-in answers; scanNow is handed out
	// with the next one.
	refreshSeconds int
	scanNow        bool
	// agentTarget is sent in check-in answers; releaseGets counts the
	// agent's reads of the release (answered 404: nothing published).
	agentTarget string
	releaseGets atomic.Int32
	// release, when set, is the published release, download its binary.
	release  *agentproto.Release
	download []byte
	// stoppings: every stopping call; hangStopping holds them unanswered
	// until the agent hangs up.
	stoppings    []agentproto.StoppingReport
	hangStopping bool
}

func newFakeServer(t *testing.T) (*fakeServer, *httptest.Server) {
	return newFakeServerTLS(t, false)
}

// newFakeServerTLS answers over HTTPS (httptest's own CA) when tls is set.
func newFakeServerTLS(t *testing.T, tls bool) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, token: "enroll-token", secret: "agent-secret-1", endpointID: "ep-1", statuses: map[string][]agentproto.CommandStatus{},
		wake: make(chan struct{}), inventoriesAt: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentproto.PathEnroll, f.enroll)
	mux.HandleFunc("POST "+agentproto.PathCheckin, f.checkin)
	mux.HandleFunc("PUT "+agentproto.PathInventory, f.inventory)
	mux.HandleFunc("POST /agent/v1/commands/{id}/status", f.status)
	mux.HandleFunc("POST "+agentproto.PathStopping, f.stopping)
	mux.HandleFunc("GET /agent/v1/release/{os}/{arch}", func(w http.ResponseWriter, r *http.Request) {
		f.releaseGets.Add(1)
		f.mu.Lock()
		rel := f.release
		f.mu.Unlock()
		if rel == nil {
			writeJSON(w, 404, map[string]any{"error": "not_found"})
			return
		}
		writeJSON(w, 200, rel)
	})
	mux.HandleFunc("GET /agent/v1/download/{os}/{arch}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b := f.download
		f.mu.Unlock()
		w.Write(b)
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() || f.statusDown.Load() && strings.HasSuffix(r.URL.Path, "/status") {
			f.refused.Add(1)
			panic(http.ErrAbortHandler) // the connection drops, as when the server is gone
		}
		mux.ServeHTTP(w, r)
	}))
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeServer) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, `{"error":"invalid_request"}`, 400)
			return false
		}
		body = zr
		f.mu.Lock()
		f.gzipSeen = true
		f.mu.Unlock()
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		http.Error(w, `{"error":"invalid_json"}`, 400)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) authorized(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked || r.Header.Get("Authorization") != "Bearer "+f.secret {
		writeJSON(w, 401, map[string]any{"error": "invalid_agent", "error_description": nil})
		return false
	}
	return true
}

func (f *fakeServer) enroll(w http.ResponseWriter, r *http.Request) {
	var req agentproto.EnrollRequest
	if !f.decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	f.lastEnroll = req
	f.mu.Unlock()
	if req.EnrollToken != f.token {
		writeJSON(w, 401, map[string]any{"error": "invalid_enroll_token", "error_description": "unknown token"})
		return
	}
	if req.MachineUID == "" || req.Hostname == "" || req.Platform == "" {
		writeJSON(w, 400, map[string]any{"error": "invalid_request"})
		return
	}
	f.mu.Lock()
	f.machineUIDs = append(f.machineUIDs, req.MachineUID)
	f.mu.Unlock()
	writeJSON(w, 200, agentproto.EnrollResponse{EndpointID: f.endpointID, AgentSecret: f.secret, CheckinSeconds: 1})
}

func (f *fakeServer) checkin(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	var req agentproto.CheckinRequest
	if !f.decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkins++
	if req.UpdateFailure != nil {
		f.failures = append(f.failures, *req.UpdateFailure)
	}
	if f.uninstall {
		f.uninstall, f.revoked = false, true // then every later call is 401
		writeJSON(w, 200, agentproto.CheckinResponse{Uninstall: true, Commands: []agentproto.Command{}})
		return
	}
	wanted := f.invHash == "" || f.invHash != req.InventoryHash
	cmds := f.pendingCommands()
	if f.longPoll && len(cmds) == 0 && !wanted && !f.scanNow && r.URL.Query().Get("wait") != "" && r.URL.Query().Get("wait") != "0" {
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-r.Context().Done():
		}
		f.mu.Lock()
		if r.Context().Err() != nil {
			return // the agent hung up: hand nothing to it
		}
		cmds = f.pendingCommands()
	}
	scan := f.scanNow
	f.scanNow = false
	writeJSON(w, 200, agentproto.CheckinResponse{Commands: cmds, CheckinSeconds: 1, InventoryWanted: wanted,
		RefreshSeconds: f.refreshSeconds, ScanNow: scan, AgentTarget: f.agentTarget})
}

// requestScan hands scanNow out with the next check-in, at once to a held one.
func (f *fakeServer) requestScan() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scanNow = true
	close(f.wake)
	f.wake = make(chan struct{})
}

// pendingCommands are the queued commands without a status; f.mu is held.
func (f *fakeServer) pendingCommands() []agentproto.Command {
	var cmds []agentproto.Command
	for _, c := range f.pending {
		if len(f.statuses[c.ID]) == 0 {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

func (f *fakeServer) inventory(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	var inv agentproto.Inventory
	if !f.decode(w, r, &inv) {
		return
	}
	f.mu.Lock()
	f.inventories = append(f.inventories, inv)
	// Like the real server: the agent's hash from the header.
	f.invHash = r.Header.Get(agentproto.HeaderInventoryHash)
	if f.invHash != collect.Hash(&inv) {
		f.t.Errorf("header hash %q differs from the inventory's hash", f.invHash)
	}
	f.mu.Unlock()
	writeJSON(w, 200, agentproto.OK{OK: true})
}

var statusRank = map[string]int{agentproto.StatusRunning: 1, agentproto.StatusSuccess: 2, agentproto.StatusFailed: 2}

func (f *fakeServer) status(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	var st agentproto.CommandStatus
	if !f.decode(w, r, &st) {
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	known := false
	for _, c := range f.pending {
		known = known || c.ID == id
	}
	if !known {
		writeJSON(w, 404, map[string]any{"error": "not_found"})
		return
	}
	prev := f.statuses[id]
	if n := len(prev); n > 0 {
		last := prev[n-1].Status
		if last == st.Status {
			writeJSON(w, 200, agentproto.OK{OK: true})
			return
		}
		if statusRank[last] >= statusRank[st.Status] {
			writeJSON(w, 409, map[string]any{"error": "conflict"})
			return
		}
	}
	f.statuses[id] = append(prev, st)
	f.inventoriesAt[id+" "+st.Status] = len(f.inventories)
	writeJSON(w, 200, agentproto.OK{OK: true})
}

func (f *fakeServer) stopping(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	var rep agentproto.StoppingReport
	if !f.decode(w, r, &rep) {
		return
	}
	f.mu.Lock()
	f.stoppings = append(f.stoppings, rep)
	hang := f.hangStopping
	f.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeServer) stoppingCalls() []agentproto.StoppingReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stoppings)
}

func (f *fakeServer) queue(c agentproto.Command) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, c)
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *fakeServer) statusesOf(id string) []agentproto.CommandStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]agentproto.CommandStatus(nil), f.statuses[id]...)
}

func (f *fakeServer) inventoryCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.inventories)
}

func echoCommand(t *testing.T, id, text string) agentproto.Command {
	raw, err := json.Marshal(agentproto.RunScriptPayload{Language: "sh", Script: "echo " + text})
	if err != nil {
		t.Fatal(err)
	}
	return agentproto.Command{ID: id, RunID: "run-" + id, Type: agentproto.TypeRunScript, Payload: raw, CreatedAt: time.Now().UTC()}
}

var testIdentity = &collect.Identity{MachineUID: "machine-1", Hostname: "test-host", Platform: "linux", OS: "Debian GNU/Linux", OSVersion: "12", Arch: "amd64"}

func enroll(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := Enroll(context.Background(), EnrollConfig{Server: srv.URL + "/", Token: "enroll-token", StateDir: dir, Identity: testIdentity}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testConfig runs the real executor and a small fixed inventory.
func testConfig(t *testing.T, dir string, collects *atomic.Int32) Config {
	return Config{
		StateDir: dir, Wait: 1, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, nil)),
		Collect: func(ctx context.Context) *agentproto.Inventory {
			collects.Add(1)
			return &agentproto.Inventory{CollectedAt: time.Now().UTC(), System: agentproto.System{Hostname: "test-host", Arch: "amd64", Type: "server"},
				Disks: []agentproto.Disk{}, Software: []agentproto.Software{{Name: "bash"}}, Updates: []agentproto.Update{}, Datasets: map[string][]map[string]any{}}
		},
		Facts: func(ctx context.Context) collect.Facts {
			boot := time.Date(2026, 11, 20, 7, 0, 0, 0, time.UTC)
			return collect.Facts{LastBootAt: &boot, IPAddresses: []string{"192.0.2.5"}}
		},
		Executor:  &execute.Executor{Runner: execute.ExecRunner{}, TempDir: t.TempDir()},
		Uninstall: func(ctx context.Context) error { return errors.New("no uninstall in this test") },
		// Never apt-get update this machine's lists from a test.
		Refresh: func(context.Context) (string, error) { return "", nil },
		// Nor look at this machine's service files.
		ServiceRoot: t.TempDir(),
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// start runs the agent until the test stops it; stop ends it and returns
// Run's error, done delivers Run's error when it returns by itself.
func start(t *testing.T, cfg Config) (stop func() error, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	ch := make(chan error, 1)
	var runErr error
	go func() {
		runErr = Run(ctx, cfg)
		close(finished)
		ch <- runErr
	}()
	stop = func() error {
		cancel()
		select {
		case <-finished:
			return runErr
		case <-time.After(waitLimit):
			return errors.New("Run did not stop")
		}
	}
	t.Cleanup(func() { stop() })
	return stop, ch
}

// waitLimit bounds every wait of these tests on a condition: generous, so
// that a busy machine passes; a passing test never waits it out.
const waitLimit = time.Minute

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestEnrollWritesState(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	fi, err := os.Stat(filepath.Join(dir, StateFileName))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.EndpointID != "ep-1" || st.AgentSecret != f.secret || st.Server != srv.URL || st.CheckinSeconds != 1 {
		t.Errorf("state %+v", st)
	}
	if !f.gzipSeen {
		t.Error("the enrollment body was not gzip-compressed")
	}
	_, err = Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "wrong", StateDir: t.TempDir(), Identity: testIdentity})
	if StatusOf(err) != 401 || !strings.Contains(err.Error(), "invalid_enroll_token") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := Enroll(context.Background(), EnrollConfig{Server: "ftp://x", Token: "t", Identity: testIdentity}); err == nil {
		t.Error("ftp server accepted")
	}
	if _, err := LoadState(t.TempDir()); !errors.Is(err, ErrNotEnrolled) {
		t.Errorf("missing state: %v", err)
	}
}

// TestEnrollWithoutMachineID: a computer without an OS machine id (a
// container without /etc/machine-id) enrolls with an id the agent makes
// and keeps in its state folder; re-enrolling with that state sends the
// same id, even once the system has an id of its own, and another state
// folder makes another id. An OS id is used as it is and nothing is kept.
func TestEnrollWithoutMachineID(t *testing.T) {
	f, srv := newFakeServer(t)
	noID := *testIdentity
	noID.MachineUID = ""
	enrollIn := func(dir string, id collect.Identity) error {
		_, err := Enroll(context.Background(), EnrollConfig{Server: srv.URL, Token: "enroll-token", StateDir: dir, Identity: &id})
		return err
	}
	last := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.machineUIDs[len(f.machineUIDs)-1]
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := enrollIn(dir, noID); err != nil {
		t.Fatal(err)
	}
	first := last()
	if !generatedID.MatchString(first) {
		t.Fatalf("enrolled with machine id %q, want 32 hexadecimal digits", first)
	}
	fi, err := os.Stat(filepath.Join(dir, MachineIDFileName))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("machine id file mode %v, want 0600", fi.Mode().Perm())
	}
	// A restart reads the state; the id is still there and unchanged.
	if _, err := LoadState(dir); err != nil {
		t.Fatal(err)
	}
	if err := enrollIn(dir, noID); err != nil || last() != first {
		t.Errorf("re-enrollment with the same state: %q, %v; want %q", last(), err, first)
	}
	if err := enrollIn(dir, *testIdentity); err != nil || last() != first {
		t.Errorf("re-enrollment once the system has an id: %q, %v; want the kept %q", last(), err, first)
	}
	other := filepath.Join(t.TempDir(), "state")
	if err := enrollIn(other, noID); err != nil || last() == first || !generatedID.MatchString(last()) {
		t.Errorf("another state folder: %q, %v", last(), err)
	}
	withOS := filepath.Join(t.TempDir(), "state")
	if err := enrollIn(withOS, *testIdentity); err != nil || last() != testIdentity.MachineUID {
		t.Errorf("with an OS machine id: %q, %v", last(), err)
	}
	if _, err := os.Stat(filepath.Join(withOS, MachineIDFileName)); !os.IsNotExist(err) {
		t.Errorf("an id was kept although the system has one: %v", err)
	}
	blocked := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(blocked, nil, 0o600)
	if err := enrollIn(filepath.Join(blocked, "state"), noID); err == nil || !strings.Contains(err.Error(), "/etc/machine-id") || !strings.Contains(err.Error(), blocked) {
		t.Errorf("no machine id and no place to keep one: %v", err)
	}
	os.WriteFile(filepath.Join(dir, MachineIDFileName), []byte("garbage\n"), 0o600)
	if err := enrollIn(dir, noID); err == nil || !strings.Contains(err.Error(), "machine id") {
		t.Errorf("a damaged machine id file: %v", err)
	}
}

func TestRunSendsInventoryAndRunsCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the echo command uses sh")
	}
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	f.queue(echoCommand(t, "cmd-1", "hello from the agent"))
	var collects atomic.Int32
	stop, _ := start(t, testConfig(t, dir, &collects))

	eventually(t, "SUCCESS of cmd-1", func() bool {
		st := f.statusesOf("cmd-1")
		return len(st) == 2
	})
	st := f.statusesOf("cmd-1")
	if st[0].Status != agentproto.StatusRunning || st[1].Status != agentproto.StatusSuccess {
		t.Fatalf("statuses %+v", st)
	}
	if st[1].Result != "hello from the agent\n" || st[1].ExitCode == nil || *st[1].ExitCode != 0 {
		t.Errorf("result %q exit %v", st[1].Result, st[1].ExitCode)
	}
	if f.inventoryCount() != 1 {
		t.Errorf("%d inventories sent, want 1", f.inventoryCount())
	}
	// Further check-ins do not run the command again nor resend the
	// unchanged inventory.
	f.mu.Lock()
	before := f.checkins
	f.mu.Unlock()
	eventually(t, "two more check-ins", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.checkins >= before+2
	})
	if n := len(f.statusesOf("cmd-1")); n != 2 || f.inventoryCount() != 1 {
		t.Errorf("after more check-ins: %d statuses, %d inventories", n, f.inventoryCount())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	saved, _ := LoadState(dir)
	if saved.InventoryHash == "" || !saved.done("cmd-1") {
		t.Errorf("state after run %+v", saved)
	}
}

func TestResultsSurviveOutage(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the echo command uses sh")
	}
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)

	// The server hands out the command, then loses every status call.
	f.statusDown.Store(true)
	f.queue(echoCommand(t, "cmd-2", "done while offline"))
	stop, _ := start(t, cfg)
	outbox := filepath.Join(dir, "outbox")
	eventually(t, "both statuses queued on disk", func() bool {
		ents, _ := os.ReadDir(outbox)
		return len(ents) == 2
	})
	// Now the whole server goes away, and the agent is restarted while it
	// is away: the queued results must survive both.
	f.down.Store(true)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outbox); len(ents) != 2 {
		t.Fatalf("%d queued results after the restart, want 2", len(ents))
	}
	if n := len(f.statusesOf("cmd-2")); n != 0 {
		t.Fatalf("server got %d statuses while down", n)
	}

	stop2, _ := start(t, cfg)
	refusedBefore := f.refused.Load()
	eventually(t, "a few failed attempts with back-off", func() bool { return f.refused.Load() >= refusedBefore+3 })
	f.statusDown.Store(false)
	f.down.Store(false)
	eventually(t, "queued results delivered", func() bool { return len(f.statusesOf("cmd-2")) == 2 })
	st := f.statusesOf("cmd-2")
	if st[0].Status != agentproto.StatusRunning || st[1].Status != agentproto.StatusSuccess || st[1].Result != "done while offline\n" {
		t.Errorf("statuses %+v", st)
	}
	eventually(t, "outbox empty", func() bool {
		ents, _ := os.ReadDir(outbox)
		return len(ents) == 0
	})
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
}

// executorFunc makes a function an Executor.
type executorFunc func(context.Context, agentproto.Command) execute.Outcome

func (f executorFunc) Execute(ctx context.Context, cmd agentproto.Command) execute.Outcome {
	return f(ctx, cmd)
}

// TestInventoryRightAfterSoftwareChange: after a command that changed the
// software, the new inventory reaches the server at once, not after the
// agent's next long poll (which this server holds until the test ends),
// and before the command's SUCCESS: a run never shows SUCCESS while its
// updates are still listed as missing. A command that changed nothing
// sends no inventory.
func TestInventoryRightAfterSoftwareChange(t *testing.T) {
	f, srv := newFakeServer(t)
	f.longPoll = true
	dir := enroll(t, srv)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.Wait = 55
	var installed atomic.Bool
	cfg.Executor = executorFunc(func(ctx context.Context, cmd agentproto.Command) execute.Outcome {
		if cmd.Type == agentproto.TypeReboot {
			return execute.Outcome{Status: agentproto.StatusSuccess, Result: "nothing changed"}
		}
		installed.Store(true)
		return execute.Outcome{Status: agentproto.StatusSuccess, Result: "htop upgraded", InventoryChanged: true}
	})
	base := cfg.Collect
	cfg.Collect = func(ctx context.Context) *agentproto.Inventory {
		inv := base(ctx)
		if !installed.Load() {
			inv.Updates = []agentproto.Update{{Title: "htop 3.2.2-2", PackageName: ptr("htop"), LatestVersion: ptr("3.2.2-2")}}
		}
		return inv
	}
	stop, _ := start(t, cfg)
	eventually(t, "the first inventory", func() bool { return f.inventoryCount() == 1 })

	// A command that changes nothing: its status, and no inventory.
	f.queue(agentproto.Command{ID: "cmd-quiet", RunID: "run-quiet", Type: agentproto.TypeReboot, Payload: []byte(`{}`), CreatedAt: time.Now().UTC()})
	eventually(t, "SUCCESS of cmd-quiet", func() bool { return len(f.statusesOf("cmd-quiet")) == 2 })
	collectsBefore := collects.Load()

	raw, _ := json.Marshal(agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{{Key: "k1", Title: "htop 3.2.2-2", PackageName: ptr("htop")}}})
	f.queue(agentproto.Command{ID: "cmd-deploy", RunID: "run-deploy", Type: agentproto.TypeDeployUpdates, Payload: raw, CreatedAt: time.Now().UTC()})
	eventually(t, "SUCCESS of cmd-deploy", func() bool { return len(f.statusesOf("cmd-deploy")) == 2 })
	f.mu.Lock()
	invs := append([]agentproto.Inventory(nil), f.inventories...)
	atDeploy, atQuiet := f.inventoriesAt["cmd-deploy "+agentproto.StatusSuccess], f.inventoriesAt["cmd-quiet "+agentproto.StatusSuccess]
	f.mu.Unlock()
	if len(invs) != 2 {
		t.Fatalf("%d inventories after the deployment, want 2 (the second sent at once)", len(invs))
	}
	if ups := invs[1].Updates; len(ups) != 0 {
		t.Errorf("the inventory after the deployment still lists %+v", ups)
	}
	if atDeploy != 2 {
		t.Errorf("SUCCESS arrived when the server had %d inventories, want 2 (the new one first)", atDeploy)
	}
	if atQuiet != 1 {
		t.Errorf("a command that changed nothing: %d inventories at its SUCCESS, want 1", atQuiet)
	}
	if c := collects.Load(); c != collectsBefore+1 {
		t.Errorf("%d collections for the deployment, want 1", c-collectsBefore)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestUninstallWhenRemoved(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	f.mu.Lock()
	f.uninstall = true
	f.mu.Unlock()
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	var uninstalled atomic.Bool
	cfg.Uninstall = func(ctx context.Context) error {
		uninstalled.Store(true)
		return os.RemoveAll(dir)
	}
	_, done := start(t, cfg)
	select {
	case err := <-done:
		if !errors.Is(err, ErrUninstalled) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after uninstall")
	}
	if !uninstalled.Load() {
		t.Error("uninstall not called")
	}
	if got := f.stoppingCalls(); len(got) != 0 {
		t.Errorf("an agent removed said it stops: %+v", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state folder still there: %v", err)
	}
}

func TestUnauthorizedStops(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	f.mu.Lock()
	f.revoked = true
	f.mu.Unlock()
	var collects atomic.Int32
	_, done := start(t, testConfig(t, dir, &collects))
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not stop on 401")
	}
	if got := f.stoppingCalls(); len(got) != 0 {
		t.Errorf("an agent refused said it stops: %+v", got)
	}
}

// TestStopTellsServer: an agent stopped (its context ended: a signal, or
// the Windows service's stop) tells the server once, with what stopped
// it; a server that does not answer keeps the stop waiting no longer than
// StoppingTimeout (the test asserts that Run returns, and that the call
// was made).
func TestStopTellsServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		cause  error
		reason string
		hang   bool
	}{
		{"signal", nil, agentproto.StopSignal, false},
		{"service", ErrServiceStop, agentproto.StopService, false},
		{"server silent", nil, agentproto.StopSignal, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, srv := newFakeServer(t)
			f.hangStopping = c.hang
			dir := enroll(t, srv)
			var collects atomic.Int32
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() { done <- Run(ctx, testConfig(t, dir, &collects)) }()
			eventually(t, "a check-in", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.checkins > 0
			})
			if got := f.stoppingCalls(); len(got) != 0 {
				t.Fatalf("said it stops while running: %+v", got)
			}
			cancel(c.cause)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(waitLimit):
				t.Fatal("Run did not return")
			}
			if got := f.stoppingCalls(); len(got) != 1 || got[0].Reason != c.reason {
				t.Errorf("stopping calls %+v, want one with reason %q", got, c.reason)
			}
		})
	}
}

func TestInventoryResentOnlyWhenChanged(t *testing.T) {
	f, srv := newFakeServer(t)
	dir := enroll(t, srv)
	var collects atomic.Int32
	cfg := testConfig(t, dir, &collects)
	cfg.InventoryEvery = time.Millisecond // collect at every check-in
	var version atomic.Value
	version.Store("5.2.15")
	base := cfg.Collect
	cfg.Collect = func(ctx context.Context) *agentproto.Inventory {
		inv := base(ctx)
		v := version.Load().(string)
		inv.Software[0].Version = &v
		return inv
	}
	stop, _ := start(t, cfg)
	eventually(t, "first inventory", func() bool { return f.inventoryCount() == 1 })
	eventually(t, "collections with the same hash", func() bool { return collects.Load() >= 3 })
	if n := f.inventoryCount(); n != 1 {
		t.Errorf("unchanged inventory sent %d times", n)
	}
	version.Store("5.2.21")
	eventually(t, "changed inventory sent", func() bool { return f.inventoryCount() == 2 })
	stop()
}

func TestBackoffJitter(t *testing.T) {
	for i := 0; i < 100; i++ {
		d := jitter(8 * time.Second)
		if d < 4*time.Second || d >= 8*time.Second {
			t.Fatalf("jitter %v out of [4s, 8s)", d)
		}
	}
}

func TestServicePlans(t *testing.T) {
	unit := agentsvc.SystemdUnit("/usr/local/bin/patchd-agent", "/var/lib/patchd-agent")
	for _, want := range []string{"ExecStart=/usr/local/bin/patchd-agent run --state /var/lib/patchd-agent\n", "Restart=on-failure", "WantedBy=multi-user.target", "After=network-online.target"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if u := agentsvc.SystemdUnit("/opt/patchd agent/bin", "/var/lib/x"); !strings.Contains(u, `ExecStart="/opt/patchd agent/bin" run`) {
		t.Errorf("path with a blank not quoted:\n%s", u)
	}
	plist := agentsvc.LaunchdPlist("/usr/local/bin/patchd-agent", "/Library/Application Support/patchd-agent", nil)
	for _, want := range []string{"<string>com.patchd.agent</string>", "<string>/usr/local/bin/patchd-agent</string>\n\t\t<string>run</string>\n\t\t<string>--state</string>\n\t\t<string>/Library/Application Support/patchd-agent</string>",
		"<key>SuccessfulExit</key>\n\t\t<false/>", "<key>RunAtLoad</key>\n\t<true/>"} {
		if !strings.Contains(plist, want) {
			t.Errorf("plist lacks %q:\n%s", want, plist)
		}
	}
	win := InstallPlan(WinSCM, `C:\Users\a\Downloads\patchd-agent.exe`, `C:\Program Files\patchd\patchd-agent.exe`, `C:\ProgramData\patchd-agent`)
	var b strings.Builder
	win.Print(&b)
	wantWin := `run sc.exe config patchd-agent binPath= "\"C:\\Program Files\\patchd\\patchd-agent.exe\" run --state \"C:\\ProgramData\\patchd-agent\"" start= auto`
	if !strings.Contains(b.String(), wantWin) || !strings.Contains(b.String(), "run sc.exe start patchd-agent") ||
		!strings.HasPrefix(b.String(), "run sc.exe stop patchd-agent (failure ignored)\ncopy C:\\Users\\a\\Downloads\\patchd-agent.exe to C:\\Program Files\\patchd\\patchd-agent.exe") {
		t.Errorf("windows plan:\n%s", b.String())
	}
	// Recovery: restarts after 5 s, 30 s, then every minute, also after a failing exit code.
	for _, want := range []string{"run sc.exe failure patchd-agent reset= 86400 actions= restart/5000/restart/30000/restart/60000\n",
		"run sc.exe failureflag patchd-agent 1\nrun sc.exe start patchd-agent\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("windows plan lacks %q:\n%s", want, b.String())
		}
	}
	if wenv := InstallPlanEnv(WinSCM, `C:\a.exe`, `C:\b.exe`, `C:\s`, []string{"HTTPS_PROXY=http://p:3128"}); wenv.Run[5].Path != "reg.exe" ||
		wenv.Run[len(wenv.Run)-1].Args[0] != "start" || wenv.Run[4].Args[0] != "failureflag" {
		t.Errorf("windows plan with a proxy: %+v", wenv.Run)
	}
	if got := win.Run[0].Args[3]; got != `"C:\Program Files\patchd\patchd-agent.exe" run --state "C:\ProgramData\patchd-agent"` {
		t.Errorf("binPath %s", got)
	}
	lin := InstallPlan(Systemd, "/home/a/patchd-agent", "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent")
	if lin.CopyTo != "/usr/local/bin/patchd-agent" || lin.Write[0].Path != agentsvc.SystemdPath || !strings.Contains(lin.Write[0].Content, "ExecStart=/usr/local/bin/patchd-agent run") ||
		fmt.Sprint(lin.Run) != fmt.Sprint([]execute.Cmd{{Path: "systemctl", Args: []string{"daemon-reload"}}, {Path: "systemctl", Args: []string{"enable", "patchd-agent"}}, {Path: "systemctl", Args: []string{"restart", "patchd-agent"}}}) {
		t.Errorf("linux plan %+v", lin)
	}
	if same := InstallPlan(Systemd, "/usr/local/bin/patchd-agent", "/usr/local/bin/patchd-agent", "/var/lib/x"); same.CopyTo != "" {
		t.Errorf("a binary in place is copied onto itself: %+v", same)
	}
	sysv := InstallPlan(SysV, "/tmp/a", "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent")
	if sysv.Write[0].Path != agentsvc.InitScript || sysv.Write[0].Mode != 0o755 || !strings.Contains(sysv.Write[0].Content, "EXE='/usr/local/bin/patchd-agent'") ||
		sysv.Run[len(sysv.Run)-1].Path != agentsvc.InitScript || sysv.Run[len(sysv.Run)-1].Args[0] != "restart" {
		t.Errorf("sysv plan %+v", sysv)
	}
	orc := InstallPlan(OpenRC, "/tmp/a", "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent")
	if !strings.HasPrefix(orc.Write[0].Content, "#!/sbin/openrc-run") || orc.Run[0].Path != "rc-update" {
		t.Errorf("openrc plan %+v", orc)
	}
	un := UninstallPlan(Systemd, "/var/lib/patchd-agent", "/usr/local/bin/patchd-agent")
	if last := un.Run[len(un.Run)-1]; last.Path != "systemctl" || last.Args[0] != "stop" || un.Remove[0] != "/var/lib/patchd-agent" ||
		fmt.Sprint(un.Remove) != "[/var/lib/patchd-agent /etc/systemd/system/patchd-agent.service /etc/default/patchd-agent /usr/local/bin/patchd-agent]" {
		t.Errorf("linux uninstall must stop last: %+v", un)
	}
	if keep := UninstallPlan(SysV, "", ""); fmt.Sprint(keep.Remove) != "[/etc/init.d/patchd-agent /etc/default/patchd-agent]" || keep.Before[0].Args[0] != "stop" {
		t.Errorf("sysv uninstall keeping the state %+v", keep)
	}
	mac := UninstallPlan(Launchd, "/Library/Application Support/patchd-agent", "")
	if mac.Remove[1] != agentsvc.LaunchdPath || mac.Run[0].Args[1] != "system/com.patchd.agent" {
		t.Errorf("mac uninstall %+v", mac)
	}
}

// TestProxyRecorded: install records the proxy of its environment for
// the service, on every service manager, in files only root reads (the
// address may hold a password). A password with $, quotes, a backquote or
// a backslash is kept as it is: sourced by sh as the OpenRC and SysV
// scripts do, the file gives the value back; a line break is refused.
func TestProxyRecorded(t *testing.T) {
	const odd = `http://us'er:p$a"s` + "`" + `w\o$(reboot)rd@proxy.example:3128`
	env, err := ProxyEnv([]string{"PATH=/bin", "https_proxy=http://proxy.example:3128", "NO_PROXY=.corp,10.0.0.0/8", "HTTP_PROXY=" + odd})
	if err != nil || fmt.Sprint(env) != "[HTTPS_PROXY=http://proxy.example:3128 HTTP_PROXY="+odd+" NO_PROXY=.corp,10.0.0.0/8]" {
		t.Fatalf("ProxyEnv %v %v", env, err)
	}
	if _, err := ProxyEnv([]string{"HTTPS_PROXY=http://p:3128\nEXTRA=1"}); err == nil || !strings.Contains(err.Error(), "HTTPS_PROXY") {
		t.Fatalf("a line break: %v", err)
	}
	for _, m := range []Manager{Systemd, OpenRC, SysV} {
		p := InstallPlanEnv(m, "/tmp/a", "/usr/local/bin/patchd-agent", "/var/lib/patchd-agent", env)
		want := "# The patchd agent's environment, written by patchd-agent install.\nHTTPS_PROXY=\"http://proxy.example:3128\"\n" +
			`HTTP_PROXY="http://us'er:p\$a\"s\` + "`" + `w\\o\$(reboot)rd@proxy.example:3128"` + "\nNO_PROXY=\".corp,10.0.0.0/8\"\n"
		if p.Write[0].Path != EnvFile || p.Write[0].Content != want || p.Write[0].Mode != 0o600 {
			t.Errorf("%s: %+v", m, p.Write[0])
		}
		if !strings.Contains(p.Write[1].Content, EnvFile) {
			t.Errorf("%s service does not read %s:\n%s", m, EnvFile, p.Write[1].Content)
		}
	}
	file := filepath.Join(t.TempDir(), "patchd-agent")
	p := InstallPlanEnv(SysV, "/tmp/a", "/usr/local/bin/patchd-agent", "/x", env)
	os.WriteFile(file, []byte(p.Write[0].Content), 0o600)
	out, err := exec.Command("sh", "-c", `. "$1" && printf '%s\n%s\n%s' "$HTTPS_PROXY" "$HTTP_PROXY" "$NO_PROXY"`, "sh", file).Output()
	if err != nil || string(out) != "http://proxy.example:3128\n"+odd+"\n.corp,10.0.0.0/8" {
		t.Fatalf("sourced by sh: %q %v", out, err)
	}
	if p := InstallPlan(SysV, "/tmp/a", "/usr/local/bin/patchd-agent", "/x"); len(p.Write) != 1 {
		t.Errorf("no proxy, yet %d files", len(p.Write))
	}
	mac := InstallPlanEnv(Launchd, "/tmp/a", "/usr/local/bin/patchd-agent", "/x", env)
	if !strings.Contains(mac.Write[0].Content, "<key>EnvironmentVariables</key>\n\t<dict>\n\t\t<key>HTTPS_PROXY</key>\n\t\t<string>http://proxy.example:3128</string>") ||
		!strings.Contains(mac.Write[0].Content, "<string>http://us&apos;er:p$a&quot;s`w\\o$(reboot)rd@proxy.example:3128</string>") || mac.Write[0].Mode != 0o600 {
		t.Errorf("plist (mode %04o):\n%s", mac.Write[0].Mode, mac.Write[0].Content)
	}
	if mac := InstallPlan(Launchd, "/tmp/a", "/usr/local/bin/patchd-agent", "/x"); mac.Write[0].Mode != 0o644 {
		t.Errorf("plist without a proxy: mode %04o", mac.Write[0].Mode)
	}
	win := InstallPlanEnv(WinSCM, `C:\a.exe`, `C:\Program Files\patchd\patchd-agent.exe`, `C:\ProgramData\patchd-agent`, env)
	if reg := win.Run[5]; reg.Path != "reg.exe" || reg.Args[len(reg.Args)-2] != `HTTPS_PROXY=http://proxy.example:3128\0HTTP_PROXY=`+odd+`\0NO_PROXY=.corp,10.0.0.0/8` || win.Run[6].Args[0] != "start" {
		t.Errorf("windows: %+v", win.Run)
	}
}

// TestDetectManager: the service manager is judged from the system's
// files; with none, the answer is ErrNoServiceManager and a message that
// says what to do.
func TestDetectManager(t *testing.T) {
	mk := func(paths ...string) string {
		root := t.TempDir()
		for _, p := range paths {
			full := filepath.Join(root, p)
			if strings.HasSuffix(p, "/") {
				os.MkdirAll(full, 0o755)
				continue
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			os.WriteFile(full, []byte("#!/bin/sh\n"), 0o755)
		}
		return root
	}
	for _, tc := range []struct {
		name  string
		root  string
		want  Manager
		fails bool
	}{
		{"systemd booted", mk("run/systemd/system/", "usr/sbin/update-rc.d"), Systemd, false},
		{"openrc", mk("sbin/openrc-run", "sbin/rc-update"), OpenRC, false},
		{"sysv debian", mk("usr/sbin/update-rc.d"), SysV, false},
		{"sysv red hat", mk("etc/init.d/", "sbin/chkconfig"), SysV, false},
		{"nothing", mk("etc/init.d/", "bin/sh"), "", true},
	} {
		got, err := detectLinux(tc.root)
		if got != tc.want || (err != nil) != tc.fails {
			t.Errorf("%s: %q %v", tc.name, got, err)
		}
		if tc.fails && (!errors.Is(err, ErrNoServiceManager) || !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "patchd-agent run")) {
			t.Errorf("%s: unhelpful error %v", tc.name, err)
		}
	}
	root := mk("usr/sbin/update-rc.d")
	os.MkdirAll(filepath.Join(root, "etc/init.d"), 0o755)
	os.WriteFile(filepath.Join(root, agentsvc.InitScript), []byte(agentsvc.OpenRCScript("/x", "/y")), 0o755)
	if m := installedLinux(root); m != OpenRC {
		t.Errorf("installed openrc script read as %q", m)
	}
}

// TestPlanCopiesBinary: install copies the program to the fixed place
// (mode 0755), replacing an older copy.
func TestPlanCopiesBinary(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "new"), filepath.Join(dir, "usr/local/bin/patchd-agent")
	os.WriteFile(src, []byte("new agent"), 0o600)
	os.MkdirAll(filepath.Dir(dst), 0o755)
	os.WriteFile(dst, []byte("old agent"), 0o755)
	p := Plan{CopyFrom: src, CopyTo: dst}
	if err := p.Apply(context.Background(), &recordRunner{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dst)
	fi, _ := os.Stat(dst)
	if string(b) != "new agent" || fi.Mode().Perm() != 0o755 {
		t.Errorf("installed %q mode %v", b, fi.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".patchd-agent-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestPlanApply(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "etc", "patchd-agent.service")
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	r := &recordRunner{fail: map[string]bool{"stop": true}}
	p := Plan{Write: []File{{unit, "x", 0o644}}, Run: []execute.Cmd{{Path: "systemctl", Args: []string{"daemon-reload"}}}}
	if err := p.Apply(context.Background(), r, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(unit); string(b) != "x" {
		t.Errorf("unit %q", b)
	}
	un := Plan{Remove: []string{state, unit}, Run: []execute.Cmd{{Path: "systemctl", Args: []string{"disable"}}, {Path: "systemctl", Args: []string{"stop"}}}, Tolerate: map[int]bool{1: true}}
	if err := un.Apply(context.Background(), r, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Error("state not removed")
	}
	r.fail["disable"] = true
	if err := un.Apply(context.Background(), r, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a failing command that is not tolerated passed")
	}
}

// TestPlanNeverExposesSecretFile: the proxy's environment file of an older
// install is readable by all (0644). Anyone who opened it then must not
// read the new content, password included, through what he holds: the
// new file (0600) takes the old one's place instead of being written into
// it.
func TestPlanNeverExposesSecretFile(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "etc", "default", "patchd-agent")
	os.MkdirAll(filepath.Dir(envFile), 0o755)
	if err := os.WriteFile(envFile, []byte("HTTPS_PROXY=http://proxy:3128\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(envFile) // a user's open file, taken while it was 0644
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	secret := "HTTPS_PROXY=http://alice:s3cret@proxy:3128\n"
	p := Plan{Write: []File{{envFile, secret, 0o600}}}
	if err := p.Apply(context.Background(), &recordRunner{}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(reader); strings.Contains(string(b), "s3cret") {
		t.Fatalf("the file open since it was 0644 reads the password: %q", b)
	}
	fi, err := os.Stat(envFile)
	if b, _ := os.ReadFile(envFile); err != nil || string(b) != secret || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new file: %q %v %v", b, fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(envFile), ".patchd-agent-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

type recordRunner struct {
	fail  map[string]bool
	calls []execute.Cmd
}

func (r *recordRunner) Run(ctx context.Context, c execute.Cmd) (execute.Result, error) {
	r.calls = append(r.calls, c)
	if len(c.Args) > 0 && r.fail[c.Args[0]] {
		return execute.Result{ExitCode: 5, Output: "failed"}, nil
	}
	return execute.Result{}, nil
}

// TestRecoveryDiff: the Windows service's recovery is the agent's only
// with the three restarts, the day's reset and failing exit codes counted.
func TestRecoveryDiff(t *testing.T) {
	want := []RecoveryAction{{1, 5 * time.Second}, {1, 30 * time.Second}, {1, time.Minute}}
	if d := RecoveryDiff(want, 24*time.Hour, true); d != "" {
		t.Fatalf("the agent's own recovery differs: %s", d)
	}
	// What install set before: three restarts after a minute, exit codes not counted.
	old := []RecoveryAction{{1, time.Minute}, {1, time.Minute}, {1, time.Minute}}
	if d := RecoveryDiff(old, 24*time.Hour, false); d != "actions restart/1m0s,restart/1m0s,restart/1m0s, want restart/5s,restart/30s,restart/1m0s; a failing exit code is not a failure, want it one" {
		t.Errorf("old install: %q", d)
	}
	// An MSI without recovery: nothing set.
	if d := RecoveryDiff(nil, 0, false); !strings.HasPrefix(d, "actions none, want restart/5s") || !strings.Contains(d, "reset after 0s, want 24h0m0s") {
		t.Errorf("no recovery: %q", d)
	}
	if d := RecoveryDiff([]RecoveryAction{{1, 5 * time.Second}, {0, 30 * time.Second}, {1, time.Minute}}, 24*time.Hour, true); !strings.Contains(d, "none/30s") {
		t.Errorf("a second action that does nothing: %q", d)
	}
}
