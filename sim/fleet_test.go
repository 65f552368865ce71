package sim

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// fakeServer plays the server side of the agent protocol in memory and
// records what the agents did.
type fakeServer struct {
	t     *testing.T
	token string
	// light makes inventory uploads cheap (decompress and discard), to
	// measure the simulator rather than the fake server.
	light bool
	// busy is how many inventories to refuse with 503 and Retry-After
	// before taking them.
	busy int

	mu        sync.Mutex
	byUID     map[string]string // machineUid -> endpoint id
	endpoints map[string]*fakeEndpoint
	secrets   map[string]string // secret -> endpoint id
	tombstone map[string]bool   // secrets of removed endpoints (uninstall not yet told)
	dead      map[string]bool   // secrets that answer 401
	commands  map[string]*fakeCommand
	enrolls   int
	calls     map[string]int
	nextID    int
}

type fakeEndpoint struct {
	id, uid, hostname string
	inventory         *agentproto.Inventory
	hash              string
	inventories       int
	checkins          int
	lastCheckin       agentproto.CheckinRequest
	queue             []*fakeCommand
	wake              chan struct{}
}

type fakeCommand struct {
	cmd      agentproto.Command
	endpoint string
	status   string
	result   string
	exitCode *int
	history  []string
}

var statusOrder = map[string]int{"PENDING": 0, "RUNNING": 1, "SUCCESS": 2, "FAILED": 2}

func newFakeServer(t *testing.T) (*fakeServer, *httptest.Server) {
	s := &fakeServer{t: t, token: "enroll-token-1", byUID: map[string]string{}, endpoints: map[string]*fakeEndpoint{},
		secrets: map[string]string{}, tombstone: map[string]bool{}, dead: map[string]bool{}, commands: map[string]*fakeCommand{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/v1/enroll", s.enroll)
	mux.HandleFunc("POST /agent/v1/checkin", s.checkin)
	mux.HandleFunc("PUT /agent/v1/inventory", s.inventory)
	mux.HandleFunc("POST /agent/v1/commands/{id}/status", s.status)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, errCode string) {
	writeJSON(w, code, agentproto.Error{Error: errCode})
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = zr
	}
	return io.ReadAll(io.LimitReader(rd, agentproto.MaxInventoryBytes+1))
}

func (s *fakeServer) enroll(w http.ResponseWriter, r *http.Request) {
	var req agentproto.EnrollRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, 400, "invalid_json")
		return
	}
	if req.EnrollToken != s.token {
		fail(w, 401, "invalid_enroll_token")
		return
	}
	if req.MachineUID == "" || req.Hostname == "" || req.Platform == "" || req.OS == "" || req.Arch == "" || req.AgentVersion == "" {
		fail(w, 400, "invalid_request")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enrolls++
	id, ok := s.byUID[req.MachineUID]
	if !ok {
		s.nextID++
		id = fmt.Sprintf("ep-%04d", s.nextID)
		s.byUID[req.MachineUID] = id
		s.endpoints[id] = &fakeEndpoint{id: id, uid: req.MachineUID, hostname: req.Hostname, wake: make(chan struct{}, 1)}
	}
	s.nextID++
	secret := fmt.Sprintf("secret-%s-%d", id, s.nextID)
	s.secrets[secret] = id
	writeJSON(w, 200, agentproto.EnrollResponse{EndpointID: id, AgentSecret: secret, CheckinSeconds: 60})
}

// auth resolves the caller; it answers the uninstall or 401 cases itself.
func (s *fakeServer) auth(w http.ResponseWriter, r *http.Request, call string) (*fakeEndpoint, bool) {
	secret := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[call]++
	if s.tombstone[secret] && call == "checkin" {
		delete(s.tombstone, secret)
		s.dead[secret] = true
		writeJSON(w, 200, agentproto.CheckinResponse{Commands: []agentproto.Command{}, Uninstall: true})
		return nil, false
	}
	id, ok := s.secrets[secret]
	if !ok || s.dead[secret] || s.tombstone[secret] {
		s.calls["401"]++
		fail(w, 401, "invalid_agent")
		return nil, false
	}
	return s.endpoints[id], true
}

func (s *fakeServer) checkin(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.auth(w, r, "checkin")
	if !ok {
		return
	}
	var req agentproto.CheckinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, 400, "invalid_json")
		return
	}
	wait, _ := strconv.Atoi(r.URL.Query().Get("wait"))
	deadline := time.After(time.Duration(wait) * time.Second)
	for {
		s.mu.Lock()
		ep.checkins++
		ep.lastCheckin = req
		var cmds []agentproto.Command
		for _, c := range ep.queue {
			if c.status == "PENDING" {
				cmds = append(cmds, c.cmd)
			}
		}
		resp := agentproto.CheckinResponse{Commands: cmds, CheckinSeconds: 60, InventoryWanted: ep.hash == "" || ep.hash != req.InventoryHash}
		s.mu.Unlock()
		if len(cmds) > 0 || wait == 0 {
			if resp.Commands == nil {
				resp.Commands = []agentproto.Command{}
			}
			writeJSON(w, 200, resp)
			return
		}
		select {
		case <-ep.wake:
		case <-deadline:
			wait = 0
		case <-r.Context().Done():
			return
		}
	}
}

func (s *fakeServer) inventory(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.auth(w, r, "inventory")
	if !ok {
		return
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		s.t.Errorf("inventory of %s sent without gzip", ep.id)
	}
	s.mu.Lock()
	refuse := s.busy > 0
	if refuse {
		s.busy--
	}
	s.mu.Unlock()
	if refuse {
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusServiceUnavailable, "busy")
		return
	}
	body, err := readBody(r)
	if err != nil {
		fail(w, 400, "invalid_request")
		return
	}
	if s.light {
		s.mu.Lock()
		ep.hash = r.Header.Get(agentproto.HeaderInventoryHash)
		ep.inventories++
		s.mu.Unlock()
		writeJSON(w, 200, agentproto.OK{OK: true})
		return
	}
	var inv agentproto.Inventory
	if err := json.Unmarshal(body, &inv); err != nil || inv.System.Hostname == "" {
		fail(w, 400, "invalid_json")
		return
	}
	// like the server: the agent's X-Inventory-Hash, else the body's digest
	hash := r.Header.Get(agentproto.HeaderInventoryHash)
	if hash == "" {
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
	}
	if inv.CollectedAt.IsZero() || time.Since(inv.CollectedAt) > time.Minute {
		s.t.Errorf("inventory of %s collected at %v", ep.id, inv.CollectedAt)
	}
	s.mu.Lock()
	ep.inventory, ep.hash = &inv, hash
	ep.inventories++
	s.mu.Unlock()
	writeJSON(w, 200, agentproto.OK{OK: true})
}

func (s *fakeServer) status(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.auth(w, r, "status")
	if !ok {
		return
	}
	var st agentproto.CommandStatus
	if err := json.NewDecoder(r.Body).Decode(&st); err != nil {
		fail(w, 400, "invalid_json")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commands[r.PathValue("id")]
	if !ok || c.endpoint != ep.id {
		fail(w, 404, "not_found")
		return
	}
	if st.Status == c.status {
		writeJSON(w, 200, agentproto.OK{OK: true})
		return
	}
	if c.status == "SUCCESS" || c.status == "FAILED" || statusOrder[st.Status] <= statusOrder[c.status] {
		fail(w, 409, "conflict")
		return
	}
	c.status = st.Status
	c.result += st.Result
	c.exitCode = st.ExitCode
	c.history = append(c.history, st.Status)
	writeJSON(w, 200, agentproto.OK{OK: true})
}

// queue adds a command for an endpoint and wakes its long poll.
func (s *fakeServer) queue(endpointID, typ string, payload any) string {
	raw, err := json.Marshal(payload)
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("cmd-%d", s.nextID)
	c := &fakeCommand{cmd: agentproto.Command{ID: id, RunID: "run-" + id, Type: typ, Payload: raw, CreatedAt: time.Now().UTC()}, endpoint: endpointID, status: "PENDING"}
	s.commands[id] = c
	ep := s.endpoints[endpointID]
	ep.queue = append(ep.queue, c)
	select {
	case ep.wake <- struct{}{}:
	default:
	}
	return id
}

// remove deletes an endpoint: its next check-in is told to uninstall.
func (s *fakeServer) remove(endpointID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for secret, id := range s.secrets {
		if id == endpointID {
			s.tombstone[secret] = true
		}
	}
	select {
	case s.endpoints[endpointID].wake <- struct{}{}:
	default:
	}
}

// revoke makes the endpoint's secrets answer 401.
func (s *fakeServer) revoke(endpointID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for secret, id := range s.secrets {
		if id == endpointID {
			s.dead[secret] = true
		}
	}
	select {
	case s.endpoints[endpointID].wake <- struct{}{}:
	default:
	}
}

func (s *fakeServer) with(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testConfig(url, token string, n int) Config {
	return Config{
		Server: url, EnrollToken: token, Endpoints: n, Seed: 7,
		Checkin: 300 * time.Millisecond, Wait: time.Second, Speed: 1000, Concurrency: 8,
	}
}

func TestFleetAgainstFakeServer(t *testing.T) {
	srv, hs := newFakeServer(t)
	cfg := testConfig(hs.URL, srv.token, 50)
	cfg.StatePath = filepath.Join(t.TempDir(), "state.json")
	fleet, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := fleet.Enroll(ctx); err != nil {
		t.Fatal(err)
	}
	st := fleet.Stats()
	if st.Enrolled != 50 || st.InventoriesSent != 50 || st.errorTotal() != 0 {
		t.Fatalf("after Enroll: %+v", st)
	}
	ids := fleet.EndpointIDs()
	srv.with(func() {
		if len(srv.endpoints) != 50 {
			t.Fatalf("server knows %d endpoints, want 50", len(srv.endpoints))
		}
		for i, id := range ids {
			ep := srv.endpoints[id]
			want := Generate(cfg.Seed, i)
			if ep.inventory == nil || ep.inventory.System.Hostname != want.System.Hostname || len(ep.inventory.Software) != len(want.Software) {
				t.Fatalf("endpoint %d: stored inventory does not match Generate", i)
			}
		}
	})

	runDone := make(chan error, 1)
	go func() { runDone <- fleet.Run(ctx) }()

	commandDone := func(id string) func() bool {
		return func() bool {
			done := false
			srv.with(func() { done = srv.commands[id].status == "SUCCESS" || srv.commands[id].status == "FAILED" })
			return done
		}
	}

	t.Run("run script", func(t *testing.T) {
		id := srv.queue(ids[0], agentproto.TypeRunScript, agentproto.RunScriptPayload{
			Language: "bash", Script: "#!/bin/bash\nset -e\necho \"hello from $HOSTNAME\"\nuptime\necho 'done'\n",
		})
		waitFor(t, "the script to finish", commandDone(id))
		srv.with(func() {
			c := srv.commands[id]
			if c.status != "SUCCESS" || c.exitCode == nil || *c.exitCode != 0 {
				t.Fatalf("script ended %s (%v): %s", c.status, c.exitCode, c.result)
			}
			if strings.Join(c.history, ",") != "RUNNING,SUCCESS" {
				t.Errorf("status history %v", c.history)
			}
			host := srv.endpoints[ids[0]].hostname
			if !strings.Contains(c.result, "hello from "+host+"\ndone\n") {
				t.Errorf("script output %q lacks the echo lines", c.result)
			}
		})
	})

	t.Run("deploy updates", func(t *testing.T) {
		var before agentproto.Inventory
		var oldHash string
		srv.with(func() { before, oldHash = *srv.endpoints[ids[1]].inventory, srv.endpoints[ids[1]].hash })
		var chosen []agentproto.Update
		for _, u := range before.Updates {
			if u.Source == "Applications" || len(chosen) == 0 {
				chosen = append(chosen, u)
			}
			if len(chosen) == 2 {
				break
			}
		}
		payload := agentproto.DeployUpdatesPayload{}
		for _, u := range chosen {
			payload.Updates = append(payload.Updates, agentproto.DeployUpdate{
				Key: u.Title, Title: u.Title, KB: u.KB, WingetID: u.WingetID, PackageName: u.PackageName, LatestVersion: u.LatestVersion,
			})
		}
		id := srv.queue(ids[1], agentproto.TypeDeployUpdates, payload)
		waitFor(t, "the deployment to finish", commandDone(id))
		srv.with(func() {
			if c := srv.commands[id]; c.status != "SUCCESS" {
				t.Fatalf("deployment ended %s: %s", c.status, c.result)
			}
		})
		waitFor(t, "a new inventory", func() bool {
			changed := false
			srv.with(func() { changed = srv.endpoints[ids[1]].hash != oldHash })
			return changed
		})
		var after agentproto.Inventory
		srv.with(func() { after = *srv.endpoints[ids[1]].inventory })
		if len(after.Updates) != len(before.Updates)-len(chosen) {
			t.Fatalf("%d updates before, %d deployed, %d after", len(before.Updates), len(chosen), len(after.Updates))
		}
		for _, u := range after.Updates {
			for _, c := range chosen {
				if u.Title == c.Title {
					t.Errorf("update %q is still listed", u.Title)
				}
			}
		}
		for _, c := range chosen {
			if c.Source != "Applications" {
				continue
			}
			name := strings.TrimSuffix(c.Title, " "+*c.LatestVersion)
			for _, s := range after.Software {
				if s.Name == name && *s.Version != *c.LatestVersion {
					t.Errorf("%s still at %s after updating to %s", name, *s.Version, *c.LatestVersion)
				}
			}
		}
		found := 0
		for _, row := range after.Datasets["installed-updates"] {
			for _, c := range chosen {
				if row["title"] == c.Title && row["installedBy"] == "patchd" {
					found++
				}
			}
		}
		if found != len(chosen) {
			t.Errorf("installed-updates lists %d of the %d deployed updates", found, len(chosen))
		}
	})

	t.Run("reboot", func(t *testing.T) {
		var bootBefore time.Time
		srv.with(func() { bootBefore = *srv.endpoints[ids[3]].lastCheckin.LastBootAt })
		id := srv.queue(ids[3], agentproto.TypeReboot, agentproto.RebootPayload{Message: "Patch window", TimeoutSeconds: 5})
		waitFor(t, "the reboot", commandDone(id))
		waitFor(t, "a check-in after the reboot", func() bool {
			ok := false
			srv.with(func() {
				lc := srv.endpoints[ids[3]].lastCheckin
				ok = lc.LastBootAt.After(bootBefore) && !lc.PendingReboot
			})
			return ok
		})
	})

	t.Run("uninstall stops the agent", func(t *testing.T) {
		srv.remove(ids[2])
		waitFor(t, "the agent to uninstall", func() bool { return fleet.Stats().Uninstalled == 1 })
		var n int
		srv.with(func() { n = srv.endpoints[ids[2]].checkins })
		time.Sleep(3 * cfg.Checkin)
		srv.with(func() {
			if srv.endpoints[ids[2]].checkins != n {
				t.Errorf("an uninstalled agent kept checking in")
			}
		})
	})

	t.Run("401 stops the agent", func(t *testing.T) {
		srv.revoke(ids[4])
		waitFor(t, "the agent to stop", func() bool { return fleet.Stats().Unauthorized == 1 })
	})

	t.Run("long polls wake on a new command", func(t *testing.T) {
		st := fleet.Stats()
		if st.LongPollWakeups == 0 || st.CommandPickupMs.Count == 0 {
			t.Errorf("no command arrived through a long poll: %+v", st)
		}
		// How fast is a figure, not a test: a busy machine must pass.
		t.Logf("commands reached the agents in %.0f ms (p50)", st.CommandPickupMs.P50)
	})

	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	st = fleet.Stats()
	if st.Active != 0 {
		t.Errorf("%d agents still active after Run returned", st.Active)
	}
	if st.CommandsSucceeded != 3 || st.CommandsFailed != 0 {
		t.Errorf("commands: %d ok, %d failed", st.CommandsSucceeded, st.CommandsFailed)
	}

	// a restarted simulator resumes the same endpoints without enrolling
	var enrolls int
	srv.with(func() { enrolls = srv.enrolls })
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if err := again.Enroll(ctx2); err != nil {
		t.Fatal(err)
	}
	st2 := again.Stats()
	if st2.Resumed != 50 || st2.Enrolled != 0 {
		t.Errorf("resume: %d resumed, %d enrolled", st2.Resumed, st2.Enrolled)
	}
	if st2.InventoriesSent != 0 {
		t.Errorf("resume re-sent %d unchanged inventories", st2.InventoriesSent)
	}
	srv.with(func() {
		if srv.enrolls != enrolls {
			t.Errorf("resume enrolled again (%d calls)", srv.enrolls-enrolls)
		}
	})
	for i, id := range again.EndpointIDs() {
		if id != ids[i] {
			t.Fatalf("endpoint %d resumed as %s, was %s", i, id, ids[i])
		}
	}
}

// TestEnrollWaitsForBusyServer: inventories refused with 503 and
// Retry-After are sent again; Enroll ends when every one is stored.
func TestEnrollWaitsForBusyServer(t *testing.T) {
	srv, hs := newFakeServer(t)
	srv.busy = 30
	fleet, err := New(testConfig(hs.URL, srv.token, 20))
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Enroll(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, ep := range srv.endpoints {
		if ep.inventory == nil {
			t.Errorf("%s: no inventory stored after Enroll", ep.hostname)
		}
	}
	if srv.busy != 0 || len(srv.endpoints) != 20 {
		t.Fatalf("%d refusals left, %d endpoints", srv.busy, len(srv.endpoints))
	}
}

func TestEnrollRefusedToken(t *testing.T) {
	_, hs := newFakeServer(t)
	fleet, err := New(testConfig(hs.URL, "wrong", 20))
	if err != nil {
		t.Fatal(err)
	}
	err = fleet.Enroll(context.Background())
	if !errors.Is(err, ErrEnrollToken) {
		t.Fatalf("Enroll with a bad token: %v", err)
	}
}

func TestReEnrollKeepsEndpoint(t *testing.T) {
	srv, hs := newFakeServer(t)
	cfg := testConfig(hs.URL, srv.token, 5)
	a, _ := New(cfg)
	b, _ := New(cfg)
	if err := a.Enroll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Enroll(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, id := range a.EndpointIDs() {
		if b.EndpointIDs()[i] != id {
			t.Errorf("endpoint %d enrolled twice as %s and %s: machineUid is not stable", i, id, b.EndpointIDs()[i])
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{EnrollToken: "t", Endpoints: 1},
		{Server: "ftp://x", EnrollToken: "t", Endpoints: 1},
		{Server: "http://x", Endpoints: 1},
		{Server: "http://x", EnrollToken: "t"},
		{Server: "http://x", EnrollToken: "t", Endpoints: 1, FailureRate: 2},
		{Server: "http://x", EnrollToken: "t", Endpoints: 1, Wait: 2 * time.Minute},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}

// TestScale enrolls a large fleet against the in-process fake server and
// runs it briefly: PATCHD_SIM_SCALE=10000 go test -run TestScale ./sim/
// It measures the simulator's own cost (the fake server is cheap).
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PATCHD_SIM_SCALE"))
	if n == 0 {
		t.Skip("set PATCHD_SIM_SCALE to the number of endpoints")
	}
	srv, hs := newFakeServer(t)
	srv.light = true
	cfg := testConfig(hs.URL, srv.token, n)
	cfg.Concurrency = 64
	cfg.Checkin, cfg.Wait = 10*time.Second, 5*time.Second
	cfg.Logf = t.Logf
	cfg.ProgressEvery = 5 * time.Second
	fleet, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second+time.Duration(n)*5*time.Millisecond)
	defer cancel()
	if err := fleet.Enroll(ctx); err != nil {
		t.Fatal(err)
	}
	st := fleet.Stats()
	t.Logf("enroll+inventory of %d endpoints: %.1fs, %d inventories (%.1f KB gzip on average), enroll p99 %.1fms, inventory p99 %.1fms",
		n, st.EnrollInventorySeconds, st.InventoriesSent, float64(st.InventoryBytes)/float64(max(st.InventoriesSent, 1))/1024,
		st.EnrollLatencyMs.P99, st.InventoryLatencyMs.P99)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use %d MB, goroutines %d", ms.HeapInuse>>20, runtime.NumGoroutine())
	go func() {
		time.Sleep(15 * time.Second)
		runtime.ReadMemStats(&ms)
		t.Logf("while polling: heap in use %d MB, goroutines %d", ms.HeapInuse>>20, runtime.NumGoroutine())
		cancel()
	}()
	if err := fleet.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st = fleet.Stats()
	if st.InventoriesSent != int64(n) || st.errorTotal() != 0 {
		t.Errorf("stats: %+v", st)
	}
	t.Logf("check-ins %d, check-in p50 %.1fms p99 %.1fms", st.Checkins, st.CheckinLatencyMs.P50, st.CheckinLatencyMs.P99)
}
