package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// member is one replica of a cluster test, which the test can kill.
type member struct {
	name  string
	store *store.Store
	srv   *server.Server
	ts    *httptest.Server
	url   string
	stop  context.CancelFunc
	done  chan struct{}
	dead  atomic.Bool
}

func startMember(t *testing.T, name string, cfg config.Config, s *store.Store) *member {
	t.Helper()
	m := &member{name: name, store: s, srv: server.New(cfg, s), done: make(chan struct{})}
	m.ts = httptest.NewServer(m.srv.Handler())
	m.url = m.ts.URL
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() { m.srv.RunWorkers(ctx); close(m.done) }()
	t.Cleanup(func() {
		m.ts.CloseClientConnections()
		m.ts.Close()
		m.stop()
		<-m.done
		m.srv.Close()
	})
	return m
}

// kill ends the replica the way a crash would look to everyone else: its
// listener and every connection (long polls in flight) close, its database
// connections go away before its workers can record anything, then its
// workers stop.
func (m *member) kill() {
	m.dead.Store(true)
	m.ts.Listener.Close()
	m.ts.CloseClientConnections()
	m.store.Close()
	m.stop()
	<-m.done
}

// hookReceiver counts the webhook deliveries it answered, by event id.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  map[string]int
	seen atomic.Int64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{got: map[string]int{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m alerts.Message
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.seen.Add(1)
		h.mu.Lock()
		h.got[m.ID]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) count(eventID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[eventID]
}

func (h *hookReceiver) snapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.got))
	for k, v := range h.got {
		out[k] = v
	}
	return out
}

// arrival is a command as one agent received it.
type arrival struct {
	agent   int
	cmd     agentproto.Command
	at      time.Time
	replica string
}

// clusterAgent is a minimal agent: it long-polls one replica, moves to the
// next one when its replica stops answering, and reports SUCCESS on every
// command after ExecDelay (again through whichever replica answers).
type clusterAgent struct {
	n        int
	id       string
	secret   string
	members  []*member
	at       atomic.Int32
	exec     atomic.Int64 // nanoseconds a command takes
	arrivals chan<- arrival
	mu       sync.Mutex
	received map[string]int // command id → times delivered
	reported map[string]bool
}

var agentHTTP = &http.Client{Timeout: 30 * time.Second}

func (a *clusterAgent) call(ctx context.Context, method, path string, body any, header ...string) (int, []byte, error) {
	m := a.members[a.at.Load()]
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, m.url+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.secret)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := agentHTTP.Do(req)
	if err == nil && resp.StatusCode >= 500 {
		resp.Body.Close()
		err = fmt.Errorf("%s answered %d", m.name, resp.StatusCode)
	}
	if err != nil {
		if ctx.Err() == nil {
			// The replica is gone (or failing): the load balancer would
			// send the next request elsewhere.
			a.at.CompareAndSwap(a.at.Load(), (a.at.Load()+1)%int32(len(a.members)))
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func (a *clusterAgent) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		code, body, err := a.call(ctx, "POST", agentproto.PathCheckin+"?wait=20", agentproto.CheckinRequest{InventoryHash: "h1"})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if code != http.StatusOK {
			t.Errorf("agent %d: check-in answered %d %s", a.n, code, body)
			return
		}
		var r agentproto.CheckinResponse
		if err := json.Unmarshal(body, &r); err != nil {
			t.Errorf("agent %d: check-in: %v", a.n, err)
			return
		}
		replica := a.members[a.at.Load()].name
		for _, c := range r.Commands {
			a.mu.Lock()
			a.received[c.ID]++
			first := a.received[c.ID] == 1
			a.mu.Unlock()
			if first {
				a.arrivals <- arrival{agent: a.n, cmd: c, at: time.Now(), replica: replica}
			}
			select {
			case <-time.After(time.Duration(a.exec.Load())):
			case <-ctx.Done():
				return
			}
			for ctx.Err() == nil {
				code, body, err := a.call(ctx, "POST", fmt.Sprintf(agentproto.PathCommandStatus, c.ID), agentproto.CommandStatus{Status: "SUCCESS", At: time.Now()})
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if code != http.StatusOK && code != http.StatusNoContent {
					t.Errorf("agent %d: status of %s answered %d %s", a.n, c.ID, code, body)
				}
				a.mu.Lock()
				a.reported[c.ID] = true
				a.mu.Unlock()
				break
			}
		}
	}
}

// Three patchd replicas on one PostgreSQL database, agents and API clients
// spread across them: every automation slot fires once, every alert is
// delivered once, a command queued through one replica reaches an agent
// polling another, a replica killed mid-run loses nothing
// (its agents move on and finish, its alert claims are taken over), a
// revoked credential stops working on every replica, and the failed-secret
// limit answers 429 whichever replica is asked.
func TestThreeReplicas(t *testing.T) {
	replicasOnPostgres(t)
	ctx := context.Background()
	hook := newHookReceiver(t)
	roots := x509.NewCertPool()
	roots.AddCert(hook.srv.Certificate())
	cfg := config.Config{CheckinInterval: 60 * time.Second, SchedulerInterval: 100 * time.Millisecond, AllowPrivateWebhooks: true,
		WebhookTLS: &tls.Config{RootCAs: roots}, AlertClaim: 3 * time.Second, VulnMatchInterval: time.Second}
	s1, dbURL := storetest.OpenURL(t)
	stores := []*store.Store{s1}
	for range 2 {
		s, err := store.Open(ctx, dbURL, "", store.Options{MaxConns: 8, SecretKey: storetest.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	members := make([]*member, 3)
	for i, name := range []string{"A", "B", "C"} {
		members[i] = startMember(t, name, cfg, stores[i])
	}
	A, B, C := members[0], members[1], members[2]

	org, role, cred := acmeOps(t, s1)
	api := make([]*client.Client, 3)
	for i, m := range members {
		api[i] = client.New(m.url, cred.ClientID, cred.ClientSecret)
	}
	tok, err := admin.CreateEnrollToken(ctx, s1, "test", org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	rule, err := api[1].CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "new endpoints", Trigger: alerts.NewEndpoint,
		WebhookURL: ptr(hook.srv.URL + "/hook"), WebhookSecret: ptr("s3cret")})
	if err != nil {
		t.Fatal(err)
	}

	// Twelve agents enroll and send inventory through the three replicas in
	// turn, then long-poll the replica after the one they enrolled through.
	const agents = 12
	arrivals := make(chan arrival, 256)
	fleet := make([]*clusterAgent, agents)
	agentCtx, stopAgents := context.WithCancel(ctx)
	var agentsDone sync.WaitGroup
	t.Cleanup(func() { stopAgents(); agentsDone.Wait() })
	for i := range agents {
		m := members[i%3]
		host := fmt.Sprintf("win-%02d", i)
		code, body := agentCall(t, m.url, "POST", agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: tok.Token, MachineUID: host,
			Hostname: host, Platform: "windows", OS: "Windows 11", OSVersion: "23H2", Arch: "amd64", AgentVersion: "1.0.0"})
		if code != http.StatusOK {
			t.Fatalf("enroll through %s: %d %s", m.name, code, body)
		}
		var en agentproto.EnrollResponse
		json.Unmarshal(body, &en)
		if code, body := agentCall(t, m.url, "PUT", agentproto.PathInventory, en.AgentSecret, apitest.Sample(host, "windows"),
			agentproto.HeaderInventoryHash, "h1"); code != http.StatusOK {
			t.Fatalf("inventory through %s: %d %s", m.name, code, body)
		}
		a := &clusterAgent{n: i, id: en.EndpointID, secret: en.AgentSecret, members: members, arrivals: arrivals,
			received: map[string]int{}, reported: map[string]bool{}}
		a.at.Store(int32((i + 1) % 3))
		fleet[i] = a
		agentsDone.Go(func() { a.run(agentCtx, t) })
	}

	// Each enrollment raised one NEW_ENDPOINT event; three deliverers share
	// the outbox and each event reaches the webhook once.
	events, err := s1.ListAlertEvents(ctx, org.ID, rule.Rule.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != agents {
		t.Fatalf("%d NEW_ENDPOINT events for %d enrollments", len(events), agents)
	}
	waitFor(t, 15*time.Second, "every enrollment alert delivered", func() bool { return len(hook.snapshot()) == agents })

	// A command queued through one replica reaches the agent long-polling
	// another, for every pair of replicas.
	waitFor(t, time.Minute, "every agent's poll held", func() bool {
		for _, a := range fleet {
			held := false
			for _, m := range members {
				held = held || m.srv.Presence().Polling(a.id)
			}
			if !held {
				return false
			}
		}
		return true
	})
	for i, a := range fleet {
		via := (i + 2) % 3 // neither the replica it enrolled through nor the one it polls
		sent := time.Now()
		started, err := api[via].RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{a.id}})
		if err != nil {
			t.Fatal(err)
		}
		got := nextArrival(t, arrivals, 5*time.Second)
		if got.agent != i || got.cmd.RunID != started.RunID {
			t.Fatalf("agent %d got %+v, want run %s", got.agent, got.cmd, started.RunID)
		}
		// How fast is a figure, not a test: a busy machine must pass.
		t.Logf("queued on %s, reached agent %d polling %s in %s", members[via].name, i, got.replica, got.at.Sub(sent).Round(time.Millisecond))
	}

	// Automation slots due over a few seconds, three schedulers polling
	// every 100 ms: each slot fires once.
	const slots = 45
	base := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	ids := make([]string, slots)
	for i := range slots {
		c, err := api[i%3].CreateAutomation(ctx, apiv1.AutomationBody{Name: fmt.Sprintf("slot %02d", i), ActionType: "RUN_SCRIPT",
			TargetMode: ptr("endpoints"), EndpointIDs: []string{fleet[i%agents].id}, ScheduleKind: ptr("ONCE"),
			RunAt: ptr(base.Add(time.Duration(i%5) * time.Second).Format(time.RFC3339)), Payload: json.RawMessage(`{"script":"true","language":"sh"}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.Automation.ID
	}
	waitFor(t, 30*time.Second, "every slot fired", func() bool {
		list, err := api[0].ListAutomations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, au := range list.Items {
			if au.LastRunAt == nil {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // give a double fire the chance to show
	for i, id := range ids {
		runs, err := api[(i+1)%3].ListRuns(ctx, client.RunQuery{AutomationID: id})
		if err != nil {
			t.Fatal(err)
		}
		if runs.Total != 1 {
			t.Fatalf("slot %d fired %d times", i, runs.Total)
		}
	}
	drain(arrivals, slots, 10*time.Second)

	// Rows of the alert outbox claimed by C, as its deliverer claims them,
	// when C dies: the others take them over once the claim expires.
	var deadClaims []string
	for len(deadClaims) < 3 {
		ev, err := C.store.TestAlertRule(ctx, org.ID, rule.Rule.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pending, err := C.store.PendingDeliveries(ctx, time.Now(), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range pending {
			now := time.Now()
			if _, ok, err := C.store.ClaimDelivery(ctx, id, "replica-C", now, now.Add(cfg.AlertClaim)); err != nil {
				t.Fatal(err)
			} else if ok {
				deadClaims = append(deadClaims, ev.ID)
			}
		}
	}

	// A run in flight: every agent receives its command and takes 1.5 s to
	// carry it out; C is killed meanwhile, holding the long polls and the
	// status reports of its agents.
	for _, a := range fleet {
		a.exec.Store(int64(1500 * time.Millisecond))
	}
	all := make([]string, agents)
	for i, a := range fleet {
		all[i] = a.id
	}
	inFlight, err := api[0].RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: all})
	if err != nil {
		t.Fatal(err)
	}
	onC := 0
	for range agents {
		if got := nextArrival(t, arrivals, 5*time.Second); got.replica == C.name {
			onC++
		}
	}
	if onC == 0 {
		t.Fatal("no agent received the run through C")
	}
	C.kill()
	t.Logf("killed C while %d agents carried out its commands", onC)
	for _, a := range fleet {
		a.exec.Store(0)
	}
	waitFor(t, 20*time.Second, "the run in flight finished", func() bool { return runDone(t, api[1], inFlight.RunID, agents) })

	// The survivors carry on: a new run through A and B reaches everyone.
	after, err := api[1].RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: all})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range agents {
		got := nextArrival(t, arrivals, 5*time.Second)
		if got.replica == C.name || got.cmd.RunID != after.RunID {
			t.Fatalf("after the kill: %+v through %s", got.cmd, got.replica)
		}
	}
	t.Logf("after the kill every agent got the next run within %s", time.Since(start).Round(time.Millisecond))
	waitFor(t, 10*time.Second, "the run after the kill finished", func() bool { return runDone(t, api[0], after.RunID, agents) })
	for _, a := range fleet {
		a.mu.Lock()
		for id := range a.received {
			if !a.reported[id] {
				t.Errorf("agent %d: command %s received but never reported", a.n, id)
			}
		}
		a.mu.Unlock()
	}

	waitFor(t, 15*time.Second, "the dead replica's alert claims taken over", func() bool {
		for _, id := range deadClaims {
			if hook.count(id) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2500 * time.Millisecond) // a double delivery would show by now
	for id, n := range hook.snapshot() {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}

	// A disabled credential's token stops working on every live replica
	// within the revocation poll.
	other, err := admin.CreateCredential(ctx, s1, "test", org.ID, "reader", role.ID)
	if err != nil {
		t.Fatal(err)
	}
	bearer, _, err := client.New(A.url, other.ClientID, other.ClientSecret).Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{A, B} {
		if code := getGroups(t, m.url, bearer); code != http.StatusOK {
			t.Fatalf("token on %s: %d", m.name, code)
		}
	}
	if _, err := admin.SetCredentialDisabled(ctx, s1, "test", org.ID, other.ClientID, true); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for _, m := range []*member{A, B} {
		waitFor(t, 3*time.Second, "token revoked on "+m.name, func() bool { return getGroups(t, m.url, bearer) == http.StatusUnauthorized })
	}
	t.Logf("revocation reached both live replicas in %s", time.Since(revoked).Round(time.Millisecond))

	// Failed secrets, spread over the live replicas, count together: after
	// the limit every replica answers 429 to this client id from this
	// address, even to the right secret.
	live := []*member{A, B}
	for i := range auth.MaxFailures {
		if code := tokenRequest(t, live[i%2].url, cred.ClientID, "wrong"); code != http.StatusUnauthorized {
			t.Fatalf("failure %d on %s: %d", i+1, live[i%2].name, code)
		}
	}
	for _, m := range live {
		for _, secret := range []string{"wrong", cred.ClientSecret} {
			if code := tokenRequest(t, m.url, cred.ClientID, secret); code != http.StatusTooManyRequests {
				t.Fatalf("after %d failures %s answered %d", auth.MaxFailures, m.name, code)
			}
		}
	}
}

// waitFor waits until ok holds; within is the expected time, but a busy
// machine gets at least a minute before the test fails.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	within = max(within, time.Minute)
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nextArrival(t *testing.T, ch <-chan arrival, within time.Duration) arrival {
	t.Helper()
	within = max(within, time.Minute) // a busy machine must pass
	select {
	case a := <-ch:
		return a
	case <-time.After(within):
		t.Fatalf("no command within %s", within)
		return arrival{}
	}
}

// drain takes n arrivals (or what comes within the time).
func drain(ch <-chan arrival, n int, within time.Duration) {
	deadline := time.After(within)
	for range n {
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

func runDone(t *testing.T, c *client.Client, runID string, total int) bool {
	t.Helper()
	runs, err := c.ListRuns(context.Background(), client.RunQuery{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs.Items {
		if r.ID == runID {
			if r.Total != total {
				t.Fatalf("run %s has %d commands, want %d", runID, r.Total, total)
			}
			if r.Failed > 0 {
				t.Fatalf("run %s: %d failed", runID, r.Failed)
			}
			return r.Succeeded == total
		}
	}
	t.Fatalf("run %s not listed", runID)
	return false
}

func getGroups(t *testing.T, base, bearer string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/groups", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func tokenRequest(t *testing.T, base, clientID, secret string) int {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}}
	resp, err := http.Post(base+"/api/oauth/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
