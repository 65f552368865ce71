package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentVersionsPage: the Agents page shows the fleet's agent versions
// and update failures; its policy form sets the policy through the API
// (audited), shows a refusal in the form's words with the form as typed,
// and is not there for, nor accepted from, a Read-only user.
func TestAgentVersionsPage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	ag := e.Enroll("agents-1", "agents-pc", "linux")
	if _, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.4.0", IPAddresses: []string{},
		UpdateFailure: &agentproto.UpdateFailure{Version: "1.5.0", Reason: "bad signature"}}); ans.Status != http.StatusOK {
		t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
	}
	e.Server.Presence().Flush(ctx)

	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	_, body := r.get("/console/agents")
	for _, want := range []string{"Agent versions", "1.4.0", "agents-pc", "1.5.0", "bad signature", `href="/console/agents"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, `action="/console/agents/policy"`) {
		t.Error("a Read-only user sees the policy form")
	}
	if code, _, _ := r.post("/console/agents/policy", url.Values{"policy": {"latest"}}); code != http.StatusForbidden {
		t.Errorf("Read-only policy: %d, want 403", code)
	}

	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	if _, body := a.get("/console/agents"); !strings.Contains(body, `action="/console/agents/policy"`) {
		t.Fatal("no policy form for an administrator")
	}
	code, _, page := a.post("/console/agents/policy", url.Values{"policy": {"pinned"}, "version": {"1 5"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(page, "Pinned version: must be") || !strings.Contains(page, `name="version" value="1 5"`) {
		t.Errorf("refused form: %d\n%.3000s", code, page)
	}
	if p, _ := e.Store.AgentPolicyOf(ctx, e.Org.ID); p.Policy != "" {
		t.Fatalf("a refused form changed the policy: %+v", p)
	}
	code, loc, _ := a.post("/console/agents/policy", url.Values{"policy": {"pinned"}, "version": {"1.5.0"}})
	if code != http.StatusSeeOther || loc != "/console/agents" {
		t.Fatalf("set: %d %s", code, loc)
	}
	if p, _ := e.Store.AgentPolicyOf(ctx, e.Org.ID); p.Policy != store.AgentPolicyPinned || p.Version != "1.5.0" {
		t.Fatalf("policy: %+v", p)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "agent_policy.set"})
	if err != nil || len(entries) != 1 || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if _, body := a.get("/console/agents"); !strings.Contains(body, "Agents are told to run <strong>1.5.0</strong>") || !strings.Contains(body, "1 of 1 endpoints are behind") {
		t.Errorf("the page after the change:\n%.3000s", body)
	}
	// Another organization's administrator sees none of it.
	other := e.NewOrg("Other")
	addUser(t, e, other, "bob@example.com", store.RoleAdministrator)
	o := newBrowser(t, e.URL)
	o.signIn("bob@example.com")
	if _, body := o.get("/console/agents"); strings.Contains(body, "agents-pc") || strings.Contains(body, "1.5.0") {
		t.Error("another organization sees this one's agents")
	}
}
