package agentapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentapi"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/presence"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

func TestEnroll(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.Enroll("uid-1", "web-01", "linux")
	page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || page.Items[0].ID != ag.ID || page.Items[0].Status != "connected" || page.Items[0].EnrolledAt == nil ||
		page.Items[0].Name != "web-01" || page.Items[0].Platform != "linux" {
		t.Fatalf("enrolled endpoint: %+v", page.Items)
	}
	// A reinstalled agent keeps the endpoint and gets a new secret.
	again := e.Enroll("uid-1", "web-01", "linux")
	if again.ID != ag.ID || again.Secret == ag.Secret {
		t.Fatalf("re-enroll: %s %s", again.ID, ag.ID)
	}
	if _, ans := ag.Checkin(0, agentproto.CheckinRequest{}); ans.Status != 401 || ans.Error() != "invalid_agent" {
		t.Fatalf("old secret after re-enroll: %d %s", ans.Status, ans.Body)
	}
	if page, _ := e.Admin.ListEndpoints(ctx, client.EndpointQuery{}); page.Total != 1 {
		t.Fatalf("re-enroll duplicated the computer: %d", page.Total)
	}

	expired, err := admin.CreateEnrollToken(ctx, e.Store, "test", e.Org.ID, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	revoked, _ := admin.CreateEnrollToken(ctx, e.Store, "test", e.Org.ID, 0)
	if err := e.Store.RevokeEnrollToken(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "enroll_token.revoke", TargetType: "enroll_token"}, e.Org.ID, revoked.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"unknown token", agentproto.EnrollRequest{EnrollToken: "pde_nope", MachineUID: "u", Hostname: "h", Platform: "linux"}, 401, "invalid_enroll_token"},
		{"expired token", agentproto.EnrollRequest{EnrollToken: expired.Token, MachineUID: "u", Hostname: "h", Platform: "linux"}, 401, "invalid_enroll_token"},
		{"revoked token", agentproto.EnrollRequest{EnrollToken: revoked.Token, MachineUID: "u", Hostname: "h", Platform: "linux"}, 401, "invalid_enroll_token"},
		{"missing machineUid", agentproto.EnrollRequest{EnrollToken: e.EnrollToken, Hostname: "h", Platform: "linux"}, 400, "invalid_request"},
		{"missing everything", map[string]string{}, 400, "invalid_request"},
		{"bad platform", agentproto.EnrollRequest{EnrollToken: e.EnrollToken, MachineUID: "u", Hostname: "h", Platform: "beos"}, 400, "invalid_request"},
		{"malformed", []byte(`{"enrollToken":`), 400, "invalid_json"},
		{"wrong type", []byte(`{"enrollToken":5}`), 400, "invalid_request"},
	} {
		ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", c.body, false)
		if ans.Status != c.status || ans.Error() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, ans.Status, ans.Body, c.status, c.code)
		}
	}
}

func TestCheckinAndInventory(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.Enroll("uid-1", "ws-01", "windows")
	resp, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.1", PendingReboot: true, IPAddresses: []string{"10.0.0.5"}})
	if ans.Status != 200 || !resp.InventoryWanted || resp.CheckinSeconds != 60 || resp.Uninstall || resp.Commands == nil {
		t.Fatalf("first check-in: %d %s", ans.Status, ans.Body)
	}
	doc := apitest.Sample("ws-01", "windows")
	ag.Inventory(doc, "hash-1").Must(t, 200, "inventory")
	if resp, _ := ag.Checkin(0, agentproto.CheckinRequest{InventoryHash: "hash-1", PendingReboot: true}); resp.InventoryWanted {
		t.Fatal("inventory wanted although the hash matches")
	}
	if resp, _ := ag.Checkin(0, agentproto.CheckinRequest{InventoryHash: "other", PendingReboot: true}); !resp.InventoryWanted {
		t.Fatal("inventory not wanted although the hash differs")
	}
	if err := e.Server.Presence().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := e.Admin.GetEndpoint(ctx, ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Software) != 3 || len(d.Disks) != 1 || len(d.MissingUpdates) != 2 || *d.Manufacturer != "Dell Inc." || *d.Cores != 4 ||
		d.IPAddresses[0] != "10.0.0.5" || !d.PendingReboot || *d.AgentVersion != "1.0.1" || d.LastSeenAt == nil {
		t.Fatalf("endpoint detail: %+v", d)
	}
	first := map[string]string{}
	for _, u := range d.MissingUpdates {
		first[u.ID] = u.ID
	}

	// A second inventory drops what is no longer reported and keeps
	// detectedAt of what was seen before.
	doc.Updates = doc.Updates[:1]
	doc.Software = doc.Software[1:]
	time.Sleep(10 * time.Millisecond)
	ag.Inventory(doc, "hash-2").Must(t, 200, "second inventory")
	d, _ = e.Admin.GetEndpoint(ctx, ag.ID)
	if len(d.Software) != 2 || len(d.MissingUpdates) != 1 || d.MissingUpdates[0].ID != first[d.MissingUpdates[0].ID] {
		t.Fatalf("after second inventory: %d software, updates %+v (first ids %v)", len(d.Software), d.MissingUpdates, first)
	}
	sw, err := e.Admin.ListSoftware(ctx, client.SoftwareQuery{})
	if err != nil || sw.Total != 2 {
		t.Fatalf("software after second inventory: %+v %v", sw, err)
	}

	// An invalid document is refused and nothing is stored.
	bad := apitest.Sample("ws-01", "windows")
	bad.Software = append(bad.Software, agentproto.Software{Name: ""})
	ans = ag.Inventory(bad, "hash-3")
	if ans.Status != 400 || ans.Error() != "invalid_inventory" || !strings.Contains(string(ans.Body), "software[3].name") {
		t.Fatalf("invalid inventory: %d %s", ans.Status, ans.Body)
	}
	if d2, _ := e.Admin.GetEndpoint(ctx, ag.ID); len(d2.Software) != 2 {
		t.Fatalf("invalid inventory changed the stored one: %d", len(d2.Software))
	}
	for _, c := range []struct {
		name string
		mut  func(*agentproto.Inventory)
		want string
	}{
		{"no hostname", func(d *agentproto.Inventory) { d.System.Hostname = " " }, "system.hostname"},
		{"bad type", func(d *agentproto.Inventory) { d.System.Type = "laptop" }, "system.type"},
		{"bad source", func(d *agentproto.Inventory) { d.Updates[0].Source = "OS" }, "updates[0].source"},
		{"bad severity", func(d *agentproto.Inventory) { s := "urgent"; d.Updates[0].Severity = &s }, "updates[0].severity"},
		{"app update without version", func(d *agentproto.Inventory) { d.Updates[1].LatestVersion = nil }, "updates[1]"},
		{"negative disk", func(d *agentproto.Inventory) { v := -1.0; d.Disks[0].FreeGB = &v }, "disks[0].freeGB"},
		{"bad dataset name", func(d *agentproto.Inventory) { d.Datasets["Bad Name"] = nil }, "datasets"},
	} {
		doc := apitest.Sample("ws-01", "windows")
		c.mut(&doc)
		if ans := ag.Inventory(doc, "x"); ans.Status != 400 || !strings.Contains(string(ans.Body), c.want) {
			t.Errorf("%s: %d %s", c.name, ans.Status, ans.Body)
		}
	}
	e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, []byte(`{"system":`), false).Must(t, 400, "malformed inventory")
	e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, []byte("not gzip"), false, "Content-Encoding", "gzip").Must(t, 400, "broken gzip")
	huge := make([]byte, agentproto.MaxInventoryBytes+10)
	for i := range huge {
		huge[i] = ' '
	}
	e.Call(http.MethodPut, agentproto.PathInventory, ag.Secret, huge, true).Must(t, 413, "oversized inventory")
	if ans := e.Call(http.MethodPost, agentproto.PathCheckin, "pda_unknown", agentproto.CheckinRequest{}, false); ans.Status != 401 || ans.Error() != "invalid_agent" {
		t.Fatalf("unknown secret: %d %s", ans.Status, ans.Body)
	}
	e.Call(http.MethodPost, agentproto.PathCheckin+"?wait=abc", ag.Secret, agentproto.CheckinRequest{}, false).Must(t, 400, "bad wait")
}

func TestLongPollAndCommandStatus(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("uid-1", "ws-01", "windows")
	other := e.Enroll("uid-2", "ws-02", "windows")
	ag.MustInventory(apitest.Sample("ws-01", "windows"))
	// A long poll is seen twice (when it comes and when it ends); a check-in
	// answered at once, once: the count tells held from not held whatever
	// the machine's speed.
	hub := e.Server.Presence()
	accepted := func() int64 { n, _ := hub.Counts(); return n }
	before := accepted()
	if resp, _ := ag.Checkin(60, agentproto.CheckinRequest{InventoryHash: "none"}); !resp.InventoryWanted {
		t.Fatal("a check-in with another hash must want the inventory")
	}
	if n := accepted() - before; n != 1 {
		t.Fatalf("a check-in that wants inventory was seen %d times, want once (answered without being held)", n)
	}
	ag.Inventory(apitest.Sample("ws-01", "windows"), "known")
	got := make(chan agentproto.CheckinResponse, 1)
	go func() {
		resp, _ := ag.Checkin(60, agentproto.CheckinRequest{InventoryHash: "known"})
		got <- resp
	}()
	waitFor(t, "the long poll held", func() bool { return e.Server.Presence().Polling(ag.ID) })
	run := e.Queue(e.Org, agentproto.TypeRunScript, agentproto.RunScriptPayload{Script: "echo hi", Language: "sh"}, ag)
	// A poll that ran out its wait answers without commands: the command
	// proves the wake-up.
	resp := <-got
	if len(resp.Commands) != 1 || resp.Commands[0].RunID != run.RunID || resp.Commands[0].Type != "RUN_SCRIPT" {
		t.Fatalf("woken check-in: %+v", resp)
	}
	cmd := resp.Commands[0]
	// Without a command, a long poll is held and ends with none after the
	// wait.
	other.Inventory(apitest.Sample("ws-02", "windows"), "k2")
	before = accepted()
	if r, _ := other.Checkin(1, agentproto.CheckinRequest{InventoryHash: "k2"}); len(r.Commands) != 0 {
		t.Fatalf("idle long poll: %+v", r)
	}
	if n := accepted() - before; n != 2 {
		t.Fatalf("an idle long poll was seen %d times, want twice (held, then ended by its wait)", n)
	}

	code0 := 0
	steps := []struct {
		who    *apitest.Agent
		status string
		want   int
	}{
		{other, "RUNNING", 404},
		{ag, "PENDING", 400},
		{ag, "RUNNING", 200},
		{ag, "RUNNING", 200}, // a retry: its text is not appended again
		{ag, "SUCCESS", 200},
		{ag, "SUCCESS", 200},
		{ag, "RUNNING", 409},
		{ag, "FAILED", 409},
	}
	for i, s := range steps {
		if ans := s.who.Status(cmd.ID, s.status, "line\n", &code0); ans.Status != s.want {
			t.Fatalf("step %d %s: %d %s, want %d", i, s.status, ans.Status, ans.Body, s.want)
		}
	}
	runs, err := e.Admin.RunCommands(context.Background(), run.RunID, client.RunQuery{})
	if err != nil || len(runs.Items) != 1 || runs.Items[0].Status != "SUCCESS" || *runs.Items[0].Result != "line\nline\n" ||
		runs.Items[0].StartedAt == nil || runs.Items[0].FinishedAt == nil {
		t.Fatalf("command after report: %+v %v", runs.Items, err)
	}
	list, err := e.Admin.ListRuns(context.Background(), client.RunQuery{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("runs: %+v %v", list, err)
	}
	r := list.Items[0]
	if r.ID != run.RunID || r.Status != "COMPLETED" || r.Succeeded != 1 || r.Total != 1 || r.FinishedAt == nil {
		t.Fatalf("run after success: %+v %v", r, err)
	}
	if resp, _ := ag.Checkin(0, agentproto.CheckinRequest{InventoryHash: "known"}); len(resp.Commands) != 0 {
		t.Fatalf("finished command handed out again: %+v", resp.Commands)
	}
}

func TestRemovedEndpointUninstallsOnce(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.EnrollSample("uid-1", "ws-01", "windows")
	queued := e.Queue(e.Org, agentproto.TypeReboot, agentproto.RebootPayload{Message: "bye", TimeoutSeconds: 60}, ag)
	if err := e.Admin.DeleteEndpoint(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	resp, ans := ag.Checkin(0, agentproto.CheckinRequest{})
	if ans.Status != 200 || !resp.Uninstall || len(resp.Commands) != 0 {
		t.Fatalf("first check-in after removal: %d %s", ans.Status, ans.Body)
	}
	if _, ans := ag.Checkin(0, agentproto.CheckinRequest{}); ans.Status != 401 {
		t.Fatalf("second check-in after removal: %d", ans.Status)
	}
	ag.Inventory(apitest.Sample("ws-01", "windows"), "h").Must(t, 401, "inventory after removal")
	cmds, err := e.Admin.RunCommands(ctx, queued.RunID, client.RunQuery{})
	if err != nil || len(cmds.Items) != 1 || cmds.Items[0].Status != "CANCELLED" {
		t.Fatalf("command of removed endpoint: %+v %v", cmds, err)
	}
	runs, err := e.Admin.ListRuns(ctx, client.RunQuery{})
	if err != nil || runs.Items[0].Status != "COMPLETED" || runs.Items[0].Total != 1 {
		t.Fatalf("run of removed endpoint: %+v %v", runs, err)
	}
	// Enrolling again makes a new endpoint.
	again := e.Enroll("uid-1", "ws-01", "windows")
	if again.ID == ag.ID {
		t.Fatal("a removed endpoint came back with its old id")
	}
}

// TestRemovedEndpointReportsUninstall: the agent of a removed endpoint,
// once told, reports its removal once; it lands in the Audit Trail. Before
// it is told, for an endpoint not removed, and a second time, the report
// is refused and changes nothing.
func TestRemovedEndpointReportsUninstall(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	kept := e.Enroll("uid-2", "ws-02", "linux")
	ag := e.Enroll("uid-1", "ws-01", "linux")
	report := agentproto.UninstalledReport{Complete: false, Manager: "sysv", Problems: []string{"/etc/rc2.d/S01patchd-agent: permission denied"}}
	e.Call(http.MethodPost, agentproto.PathUninstalled, kept.Secret, report, false).Want(t, http.StatusConflict, "report of an endpoint not removed")
	if err := e.Admin.DeleteEndpoint(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	e.Call(http.MethodPost, agentproto.PathUninstalled, ag.Secret, report, false).Want(t, http.StatusUnauthorized, "report before the agent was told")
	if resp, _ := ag.Checkin(0, agentproto.CheckinRequest{}); !resp.Uninstall {
		t.Fatal("not told to uninstall")
	}
	bad := agentproto.UninstalledReport{Manager: strings.Repeat("x", 65)}
	e.Call(http.MethodPost, agentproto.PathUninstalled, ag.Secret, bad, false).Want(t, http.StatusBadRequest, "report with a long manager")
	e.Call(http.MethodPost, agentproto.PathUninstalled, ag.Secret, report, false).Must(t, http.StatusNoContent, "report")
	e.Call(http.MethodPost, agentproto.PathUninstalled, ag.Secret, report, false).Want(t, http.StatusUnauthorized, "second report")
	page, err := e.Admin.ListAudit(ctx, client.AuditQuery{Action: "endpoint.uninstalled"})
	if err != nil || page.Total != 1 {
		t.Fatalf("audit: %+v %v", page, err)
	}
	got := page.Items[0]
	if got.Actor != "agent:"+ag.ID || got.TargetID == nil || *got.TargetID != ag.ID || got.Summary["complete"] != false || got.Summary["manager"] != "sysv" ||
		fmt.Sprint(got.Summary["problems"]) != "[/etc/rc2.d/S01patchd-agent: permission denied]" {
		t.Errorf("audit entry: %+v", got)
	}
}

func TestStatusFollowsCheckins(t *testing.T) {
	e, ctx := apitest.NewParallel(t, func(c *config.Config) { c.CheckinInterval = time.Second })
	ag := e.Enroll("uid-1", "ws-01", "windows")
	ep, err := e.Admin.GetEndpoint(ctx, ag.ID)
	if err != nil || ep.Status != "connected" {
		t.Fatalf("after enroll: %+v %v", ep.Status, err)
	}
	time.Sleep(3100 * time.Millisecond)
	if ep, _ := e.Admin.GetEndpoint(ctx, ag.ID); ep.Status != "disconnected" {
		t.Fatalf("after 3 intervals without check-in: %s", ep.Status)
	}
	// An endpoint is connected for three intervals (3 s) after a check-in: a
	// machine that stalls longer between the check-in and the read sees it
	// disconnected again, so the check-in is tried a few times; a check-in
	// that never connects fails every try.
	var checkedIn time.Time
	for attempt := 1; ; attempt++ {
		checkedIn = time.Now()
		ag.Checkin(0, agentproto.CheckinRequest{})
		e.Server.Presence().Flush(ctx)
		ep, _ := e.Admin.GetEndpoint(ctx, ag.ID)
		if ep.Status == "connected" {
			break
		}
		if attempt == 5 {
			t.Fatalf("after a check-in: %s", ep.Status)
		}
	}
	// The check-in happened after this cutoff, however slow the machine.
	changes, err := e.Store.SweepStatus(ctx, checkedIn.Add(-time.Second), time.Now())
	if err != nil || len(changes) != 0 {
		t.Fatalf("sweep of a connected endpoint: %+v %v", changes, err)
	}
	changes, err = e.Store.SweepStatus(ctx, time.Now().Add(time.Second), time.Now())
	if err != nil || len(changes) != 1 || changes[0].Connected {
		t.Fatalf("sweep after the cutoff: %+v %v", changes, err)
	}
}

// TestLongPollBound: a replica bounded to one long poll holds the first
// agent's and answers the second at once, closing its connection; the
// second stays connected.
func TestLongPollBound(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *config.Config) { c.MaxLongPolls = 1 })
	first, second := e.Enroll("uid-1", "ws-01", "windows"), e.Enroll("uid-2", "ws-02", "windows")
	first.Inventory(apitest.Sample("ws-01", "windows"), "h1")
	second.Inventory(apitest.Sample("ws-02", "windows"), "h2")
	held := make(chan int, 1)
	go func() {
		_, ans := first.Checkin(2, agentproto.CheckinRequest{InventoryHash: "h1"})
		held <- ans.Status
	}()
	waitFor(t, "the first long poll held", func() bool { return e.Server.Presence().Polling(first.ID) })
	ans := e.Call(http.MethodPost, agentproto.PathCheckin+"?wait=2", second.Secret, agentproto.CheckinRequest{InventoryHash: "h2"}, false)
	if ans.Status != http.StatusOK || !ans.Close {
		t.Fatalf("past the bound: %d, connection closed %v", ans.Status, ans.Close)
	}
	if code := <-held; code != http.StatusOK {
		t.Fatalf("the long poll within the bound: %d", code)
	}
	for _, ag := range []*apitest.Agent{first, second} {
		if ep, err := e.Admin.GetEndpoint(context.Background(), ag.ID); err != nil || ep.Status != "connected" {
			t.Errorf("%s: %s, %v", ag.ID, ep.Status, err)
		}
	}
}

// waitFor waits until cond holds, polling; it measures no time. A
// condition that never comes is ended by the test binary's own timeout (go
// test -timeout), whose report names the test and the waitFor call it
// stopped in; what is logged before the wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	t.Logf("waiting for %s", what)
	for !cond() {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInventoryBound: with one inventory in progress on a server bounded to
// one, another is refused with 503 and Retry-After, stores nothing, and is
// taken once the first is stored.
func TestInventoryBound(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *config.Config) { c.MaxInventories = 1 })
	slow, other := e.Enroll("uid-1", "ws-01", "windows"), e.Enroll("uid-2", "ws-02", "windows")
	body, _ := json.Marshal(apitest.Sample("ws-01", "windows"))
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPut, e.URL+agentproto.PathInventory, pr)
	req.Header.Set("Authorization", "Bearer "+slow.Secret)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan int, 1)
	go func() {
		resp, err := e.HTTPClient.Do(req)
		if err != nil {
			t.Error(err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	defer pw.Close()
	pw.Write(body[:10]) // the first inventory is in progress, its body unread
	// Nothing else is sent until the slow one holds the only slot: another
	// inventory sent before could take it and have the slow one refused.
	waitFor(t, "the slow inventory holding the only slot", func() bool { return e.Server.Agents().InventoriesInProgress() == 1 })
	hash := "h-refused"
	ans := other.Inventory(apitest.Sample("ws-02", "windows"), hash)
	if ans.Status != http.StatusServiceUnavailable || ans.Error() != "busy" || ans.Header.Get("Retry-After") == "" || !ans.Close {
		t.Fatalf("past the bound: %d %s, Retry-After %q, closed %v", ans.Status, ans.Body, ans.Header.Get("Retry-After"), ans.Close)
	}
	if resp, _ := other.Checkin(0, agentproto.CheckinRequest{InventoryHash: hash}); !resp.InventoryWanted {
		t.Fatal("a refused inventory was stored")
	}
	pw.Write(body[10:])
	pw.Close()
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the inventory within the bound: %d", code)
	}
	other.MustInventory(apitest.Sample("ws-02", "windows"))
}

// TestDecodingBound: with every decoding slot taken, uploads wait for one
// (their bodies read); one whose client goes away stores nothing and gives
// up its place, the other is decoded and stored once a slot is free.
func TestDecodingBound(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	a := e.Server.Agents()
	gone, kept := e.Enroll("uid-1", "ws-01", "linux"), e.Enroll("uid-2", "ws-02", "linux")
	send := func(ctx context.Context, ag *apitest.Agent, host, hash string, done chan<- int) {
		body, _ := json.Marshal(apitest.Sample(host, "linux"))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, e.URL+agentproto.PathInventory, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ag.Secret)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(agentproto.HeaderInventoryHash, hash)
		resp, err := e.HTTPClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}
	release := a.HoldDecoding()
	ctx, cancel := context.WithCancel(context.Background())
	goneDone, keptDone := make(chan int, 1), make(chan int, 1)
	go send(ctx, gone, "ws-01", "h-gone", goneDone)
	waitFor(t, "the first upload waiting for a decoding slot", func() bool { return a.DecodeWaits() == 1 })
	go send(context.Background(), kept, "ws-02", "h-kept", keptDone)
	waitFor(t, "both uploads waiting for a decoding slot", func() bool { return a.DecodeWaits() == 2 })
	cancel()
	<-goneDone
	waitFor(t, "the gone client's upload leaving", func() bool { return a.DecodeWaits() == 1 })
	select {
	case code := <-keptDone:
		t.Fatalf("an upload answered %d while every decoding slot was taken", code)
	default:
	}
	release()
	if code := <-keptDone; code != http.StatusOK {
		t.Fatalf("the waiting upload, once a slot was free: %d", code)
	}
	if resp, _ := kept.Checkin(0, agentproto.CheckinRequest{InventoryHash: "h-kept"}); resp.InventoryWanted {
		t.Fatal("the waiting upload's inventory was not stored")
	}
	if resp, _ := gone.Checkin(0, agentproto.CheckinRequest{InventoryHash: "h-gone"}); !resp.InventoryWanted {
		t.Fatal("the inventory of a client that went away while it waited was stored")
	}
	if n := a.InventoriesInProgress(); n != 0 {
		t.Fatalf("%d inventory slots held after both uploads ended", n)
	}
	gone.MustInventory(apitest.Sample("ws-01", "linux"))
}

// TestCrowdedClosesConnections: while the server is crowded, agent answers
// close their connection; otherwise they keep it.
func TestCrowdedClosesConnections(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	var crowded atomic.Bool
	a := agentapi.New(agentapi.Config{Store: s, Presence: presence.New(s, 10), CheckinInterval: time.Minute, Crowded: crowded.Load})
	ts := httptest.NewServer(a)
	defer ts.Close()
	for _, want := range []bool{false, true, false} {
		crowded.Store(want)
		resp, err := http.Post(ts.URL+agentproto.PathCheckin, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Close != want {
			t.Fatalf("crowded %v: %d, connection closed %v", want, resp.StatusCode, resp.Close)
		}
	}
}
