package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/store"
)

// personClient is an API client of a credential that the person email
// (a member of org with role) created: the credential acts for it.
func personClient(t *testing.T, e *apitest.Env, org store.Org, email, role string) (*client.Client, store.ConsoleUser) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CreateUser(ctx, e.Store, "test", org.ID, email, role, "correct horse battery staple"); err != nil {
		t.Fatal(err)
	}
	c, err := admin.CreateCredentialBy(ctx, e.Store, admin.By{Actor: "user:" + email}, org.ID, "cred-"+apitest.NewName(), role)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Store.MemberByEmail(ctx, org.ID, email)
	if err != nil {
		t.Fatal(err)
	}
	return client.New(e.URL, c.ClientID, c.ClientSecret, client.WithHTTPClient(e.HTTPClient)), u
}

// TestCreateOrganization: POST /api/v1/organizations creates an
// organization for a person holding the create-organizations permission
// (403 in the Error shape without it, nothing created), refuses bad input
// with 422 (empty, taken or NUL name, an unknown time zone, a template that
// does not exist or that the person does not administer, alike), copies a
// template with its references remapped, makes the person the new
// organization's Administrator, and audits it in both organizations.
func TestCreateOrganization(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	now := time.Now()
	countOrgs := func() int {
		orgs, err := e.Store.ListOrgs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(orgs)
	}
	// The template: a group, an automation of it, an alert rule with a
	// webhook secret.
	gname := "Web servers"
	g, err := e.Store.CreateGroup(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "group.create", TargetType: "group"}, e.Org.ID,
		store.GroupChange{Name: &gname, Rules: &[]groups.Rule{{Field: "hostname", Op: groups.OpStartsWith, Value: "web-"}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.InTx(ctx, func(tx *store.Tx) error {
		a := store.Automation{OrgID: e.Org.ID, Name: "Weekly reboot", ActionType: "REBOOT", Payload: json.RawMessage(`{"message":"m","timeoutSeconds":60}`),
			Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "DAILY", AtTime: "04:00", Enabled: true, TargetMode: store.TargetGroup, GroupID: g.ID}
		return tx.CreateAutomation(ctx, &a, now)
	}); err != nil {
		t.Fatal(err)
	}
	ten := 1
	if _, err := e.Store.CreateAlertRule(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, e.Org.ID,
		alerts.Rule{Name: "Hook", Trigger: "NEW_ENDPOINT", Threshold: &ten, WebhookURL: "https://hooks.example.com/a", WebhookSecret: "s3cret"}, now); err != nil {
		t.Fatal(err)
	}
	other := e.NewOrg("Other " + apitest.NewName())

	msp, person := personClient(t, e, e.Org, "msp@example.com", store.RoleAdministrator)
	reader, _ := personClient(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	before := countOrgs()
	body := apiv1.OrganizationBody{Name: "Client A", TimeZone: "Europe/Berlin", Template: e.Org.Name}

	// 403 without the permission (a person without it, a credential the
	// command line made, a role lacking permissions); nothing created.
	var ce *client.Error
	if _, err := msp.CreateOrganization(ctx, body); !errors.As(err, &ce) || ce.Status != http.StatusForbidden || ce.Code != "create_organizations" {
		t.Fatalf("without the permission: %v", err)
	}
	if _, err := admin.SetCreateOrgs(ctx, e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "msp@example.com", true); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetCreateOrgs(ctx, e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "reader@example.com", true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateOrganization(ctx, body); !client.IsStatus(err, http.StatusForbidden) {
		t.Fatalf("a credential of the command line: %v", err)
	}
	if _, err := reader.CreateOrganization(ctx, body); !errors.As(err, &ce) || ce.Status != http.StatusForbidden || ce.Code != "insufficient_scope" {
		t.Fatalf("a read-only credential: %v", err)
	}

	// 422: bad input; the same answer for a template that does not exist
	// and one the person does not administer.
	for _, tc := range []struct {
		body apiv1.OrganizationBody
		want []string
	}{
		{apiv1.OrganizationBody{}, []string{"name"}},
		{apiv1.OrganizationBody{Name: "  "}, []string{"name"}},
		{apiv1.OrganizationBody{Name: "Bad\tname"}, []string{"name"}},
		{apiv1.OrganizationBody{Name: strings.Repeat("x", 101)}, []string{"name"}},
		{apiv1.OrganizationBody{Name: "Client B", TimeZone: "Mars/Olympus"}, []string{"timezone"}},
		{apiv1.OrganizationBody{Name: "Client B", TimeZone: "Local"}, []string{"timezone"}},
		{apiv1.OrganizationBody{Name: other.Name}, []string{"name"}},
		{apiv1.OrganizationBody{Name: "Client B", Template: "No such org"}, []string{"template"}},
		{apiv1.OrganizationBody{Name: "Client B", Template: other.ID}, []string{"template"}},
		{apiv1.OrganizationBody{Name: "Client B", Template: other.Name}, []string{"template"}},
	} {
		_, err := msp.CreateOrganization(ctx, tc.body)
		if got := fieldsOf422(t, err); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: fields %v, want %v", tc.body, got, tc.want)
		}
		if errors.As(err, &ce) && strings.Contains(ce.Description, other.ID) {
			t.Errorf("%+v: the answer names the other organization: %s", tc.body, ce.Description)
		}
	}
	var a1, a2 *client.Error
	_, err1 := msp.CreateOrganization(ctx, apiv1.OrganizationBody{Name: "Client B", Template: "No such org"})
	_, err2 := msp.CreateOrganization(ctx, apiv1.OrganizationBody{Name: "Client B", Template: other.Name})
	if !errors.As(err1, &a1) || !errors.As(err2, &a2) || a1.Description != a2.Description {
		t.Errorf("an unknown template and another organization answer differently: %v / %v", err1, err2)
	}
	// 400: a NUL character (patchd stores none), not JSON.
	for _, b := range []apiv1.OrganizationBody{{Name: "Bad\x00name"}, {Name: "Client B", Template: "x\x00y"}} {
		if _, err := msp.CreateOrganization(ctx, b); !client.IsStatus(err, http.StatusBadRequest) {
			t.Errorf("%q: %v, want 400", b, err)
		}
	}
	tok, _, err := msp.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ans := rawCall(t, e, http.MethodPost, "/api/v1/organizations", tok, []byte(`{"name":`)); ans.status != http.StatusBadRequest ||
		!strings.Contains(ans.body, `"error"`) {
		t.Fatalf("invalid JSON: %d %s", ans.status, ans.body)
	}
	if n := countOrgs(); n != before {
		t.Fatalf("refused calls created %d organizations", n-before)
	}

	out, err := msp.CreateOrganization(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "Client A" || out.TimeZone != "Europe/Berlin" || out.Administrator != "msp@example.com" || out.Copied == nil ||
		out.Copied.Groups != 1 || out.Copied.Automations != 1 || out.Copied.AlertRules != 1 || !slices.Equal(out.Copied.DisabledAlertRules, []string{"Hook"}) {
		t.Fatalf("created: %+v %+v", out, out.Copied)
	}
	// The person is Administrator there.
	m, err := e.Store.MemberByEmail(ctx, out.ID, "msp@example.com")
	if err != nil || m.RoleName != store.RoleAdministrator || m.ID != person.ID {
		t.Fatalf("membership: %+v %v", m, err)
	}
	// Remapped: the automation targets the copied group.
	gs, err := e.Store.ListGroups(ctx, out.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var copied string
	for _, cg := range gs {
		if cg.Name == gname {
			copied = cg.ID
		}
	}
	autos, err := e.Store.ListAutomations(ctx, out.ID)
	if err != nil || len(autos) != 1 || copied == "" || copied == g.ID || autos[0].GroupID != copied {
		t.Fatalf("automations %+v (copied group %s) %v", autos, copied, err)
	}
	rules, err := e.Store.ListAlertRules(ctx, out.ID)
	if err != nil || len(rules) != 1 || rules[0].HasWebhookSecret || rules[0].Enabled {
		t.Fatalf("alert rules: %+v %v", rules, err)
	}
	// Audited in both organizations.
	for _, orgID := range []string{out.ID, e.Org.ID} {
		entries, err := e.Store.ListAudit(ctx, orgID, store.AuditFilter{Action: "org.create", Limit: 5})
		if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Actor, "api:cred-") || entries[0].Summary["administrator"] != "msp@example.com" || entries[0].TargetID != out.ID {
			t.Fatalf("audit of %s: %+v %v", orgID, entries, err)
		}
	}
	// The credential stays of its organization.
	list, err := msp.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, lg := range list.Items {
		if lg.ID == copied {
			t.Fatalf("the credential reaches the new organization's group %s", copied)
		}
	}
	// Revoked: 403 again.
	if _, err := admin.SetCreateOrgs(ctx, e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "msp@example.com", false); err != nil {
		t.Fatal(err)
	}
	if _, err := msp.CreateOrganization(ctx, apiv1.OrganizationBody{Name: "Client C"}); !client.IsStatus(err, http.StatusForbidden) {
		t.Fatalf("after revocation: %v", err)
	}
}
