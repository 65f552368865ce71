package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/vulns"
)

// templateFixture fills an organization with what a template copies, and
// what it must not copy (an automation of endpoints, a webhook secret).
type templateFixture struct {
	group, script, groupAuto, ringAuto string
}

func fillTemplate(t *testing.T, s *store.Store, orgID string) templateFixture {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	e := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: orgID, Actor: "test", Action: action, TargetType: "x"}
	}
	var f templateFixture
	on := true
	if _, err := s.SetApprovalPolicy(ctx, e("approval_policy.set"), orgID, store.PolicyChange{
		Rule: &updates.PolicyRule{Severity: "Critical", Source: "OS", DelayDays: 3}, DeclineOlder: &on}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVulnPolicy(ctx, e("remediation_policy.set"), orgID, vulns.Policy{Critical: 5 * 24 * time.Hour, High: 10 * 24 * time.Hour,
		Medium: 20 * 24 * time.Hour, Low: 40 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	name := "Linux servers"
	g, err := s.CreateGroup(ctx, e("group.create"), orgID, store.GroupChange{Name: &name,
		Rules: &[]groups.Rule{{Field: "platform", Op: groups.OpEquals, Value: "linux"}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	f.group = g.ID
	sc, err := s.CreateScript(ctx, e("script.create"), store.Script{OrgID: orgID, Name: "cleanup", Language: "sh", Code: "echo clean"}, now)
	if err != nil {
		t.Fatal(err)
	}
	f.script = sc.ID
	payload, _ := json.Marshal(map[string]any{"scriptId": sc.ID, "parameters": map[string]string{}})
	err = s.InTx(ctx, func(tx *store.Tx) error {
		a := store.Automation{OrgID: orgID, Name: "Nightly cleanup", ActionType: "RUN_SCRIPT", Payload: payload, Kind: store.KindSimple,
			ScheduleKind: "RECURRING", Freq: "DAILY", AtTime: "02:00", Enabled: true, TargetMode: store.TargetGroup, GroupID: g.ID}
		if err := tx.CreateAutomation(ctx, &a, now); err != nil {
			return err
		}
		f.groupAuto = a.ID
		r := store.Automation{OrgID: orgID, Name: "Rollout", ActionType: "REBOOT", Payload: json.RawMessage(`{}`), Kind: store.KindRing,
			Enabled: true, TargetMode: store.TargetGroup, GroupID: g.ID, StartDate: now.AddDate(0, 0, 1).Format("2006-01-02"),
			Rings: []apiv1.Ring{{Name: "pilot", GroupID: g.ID, OffsetDays: 0}}}
		if err := tx.CreateAutomation(ctx, &r, now); err != nil {
			return err
		}
		f.ringAuto = r.ID
		x := store.Automation{OrgID: orgID, Name: "Those two", ActionType: "REBOOT", Payload: json.RawMessage(`{}`), Kind: store.KindSimple,
			ScheduleKind: "RECURRING", Freq: "DAILY", AtTime: "03:00", Enabled: true, TargetMode: store.TargetEndpoints, EndpointIDs: []string{"e1", "e2"}}
		return tx.CreateAutomation(ctx, &x, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	ten := 10
	if _, err := s.CreateAlertRule(ctx, e("alert.create"), orgID, alerts.Rule{Name: "Signed hook", Trigger: "NEW_ENDPOINT", Threshold: &ten,
		WebhookURL: "https://hooks.example.com/x", WebhookSecret: "template-secret"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAlertRule(ctx, e("alert.create"), orgID, alerts.Rule{Name: "Mail", Trigger: "NEW_ENDPOINT", Threshold: &ten,
		EmailTo: "ops@example.com"}, now); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCreateOrgFromTemplate(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	tmpl := newOrgFixture(t, s, "Template")
	other := newOrgFixture(t, s, "Other client")
	creator := tmpl.user(t, s, "msp@example.com", store.RoleAdministrator)
	reader := other.user(t, s, "msp2@example.com", store.RoleAdministrator)
	f := fillTemplate(t, s, tmpl.org.ID)
	fillTemplate(t, s, other.org.ID)
	ie := func() *store.InstanceEvent { return &store.InstanceEvent{Actor: "test", Action: "org_creator.grant"} }

	orgCount := func() int {
		orgs, err := s.ListOrgs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(orgs)
	}
	before := orgCount()
	create := func(name, tmplRef, userID string) (store.Org, *apiv1.OrganizationCopy, error) {
		return s.CreateOrgFor(ctx, store.NewOrg{Name: name, TimeZone: "Europe/Berlin", CreatorID: userID, Checked: true, TemplateRef: tmplRef,
			Entry: &store.AuditEntry{Actor: "user:msp@example.com", Action: "org.create"}})
	}

	// Without the permission: refused, nothing created.
	if _, _, err := create("Client A", "", creator.ID); !errors.Is(err, store.ErrNoCreateOrgs) {
		t.Fatalf("without the permission: %v, want ErrNoCreateOrgs", err)
	}
	if changed, err := s.SetCreateOrgs(ctx, ie(), creator.ID, true); err != nil || !changed {
		t.Fatalf("grant: %v %v", changed, err)
	}
	// A template the person is not a member of, one it is not
	// administrator of, and one that does not exist: the same answer.
	if err := s.AddMembership(ctx, &store.AuditEntry{Actor: "test", Action: "user.member_add"}, creator.ID, other.org.ID, other.roles[store.RoleReadOnly].ID); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{other.org.ID, other.org.Name, "Nowhere"} {
		if _, _, err := create("Client A", ref, creator.ID); !errors.Is(err, store.ErrTemplate) || !errors.Is(err, dberr.ErrNotFound) {
			t.Fatalf("template %q: %v, want ErrTemplate", ref, err)
		}
	}
	// A taken name.
	if _, _, err := create("Other client", "", creator.ID); !errors.Is(err, dberr.ErrConflict) {
		t.Fatalf("taken name: %v, want conflict", err)
	}
	if n := orgCount(); n != before {
		t.Fatalf("refused creations made %d organizations", n-before)
	}
	// reader holds no permission.
	if _, _, err := create("Client R", "", reader.ID); !errors.Is(err, store.ErrNoCreateOrgs) {
		t.Fatalf("reader: %v", err)
	}

	o, c, err := create("Client A", "Template", creator.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.ApprovalPolicies != 1 || !c.ApprovalSettings || !c.RemediationPolicy || c.Groups != 1 || c.Scripts != 1 || c.Automations != 2 ||
		c.AlertRules != 2 || len(c.SkippedAutomations) != 1 || len(c.DisabledAlertRules) != 1 {
		t.Fatalf("copied: %+v", c)
	}
	// The creator is the new organization's Administrator.
	ms, err := s.Memberships(ctx, creator.ID)
	if err != nil {
		t.Fatal(err)
	}
	var role string
	for _, m := range ms {
		if m.OrgID == o.ID {
			role = m.RoleName
		}
	}
	if role != store.RoleAdministrator {
		t.Fatalf("creator's role in the new organization: %q (%+v)", role, ms)
	}
	// Policies.
	p, err := s.GetApprovalPolicy(ctx, o.ID)
	if err != nil || !p.DeclineOlder || len(p.Rules) != 1 || p.Rules[0].DelayDays != 3 {
		t.Fatalf("approval policy: %+v %v", p, err)
	}
	vp, err := s.VulnPolicy(ctx, o.ID)
	if err != nil || vp.Critical != 5*24*time.Hour {
		t.Fatalf("remediation policy: %+v %v", vp, err)
	}
	// Groups: new ids, same criteria, no members.
	gs, err := s.ListGroups(ctx, o.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var copiedGroup store.Group
	for _, g := range gs {
		if g.Name == "Linux servers" {
			copiedGroup = g
		}
	}
	if copiedGroup.ID == "" || copiedGroup.ID == f.group || len(copiedGroup.Rules) != 1 || copiedGroup.Rules[0].Value != "linux" || copiedGroup.Members != 0 {
		t.Fatalf("copied group: %+v", copiedGroup)
	}
	// Automations: remapped to the copied group and script.
	autos, err := s.ListAutomations(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := s.ListScripts(ctx, o.ID)
	if err != nil || len(scripts) != 1 || scripts[0].ID == f.script || scripts[0].Code != "echo clean" {
		t.Fatalf("copied scripts: %+v %v", scripts, err)
	}
	byName := map[string]store.Automation{}
	for _, a := range autos {
		byName[a.Name] = a
		if a.ID == f.groupAuto || a.ID == f.ringAuto {
			t.Fatalf("automation kept its id: %+v", a)
		}
	}
	if len(autos) != 2 {
		t.Fatalf("automations: %d, want 2 (the one of endpoints is not copied)", len(autos))
	}
	nightly, ring := byName["Nightly cleanup"], byName["Rollout"]
	var payload struct{ ScriptID string }
	_ = json.Unmarshal(nightly.Payload, &payload)
	if nightly.GroupID != copiedGroup.ID || payload.ScriptID != scripts[0].ID || nightly.NextRunAt == nil || nightly.CreatedBy != "user:msp@example.com" {
		t.Fatalf("nightly: group %s script %s next %v by %q", nightly.GroupID, payload.ScriptID, nightly.NextRunAt, nightly.CreatedBy)
	}
	if ring.GroupID != copiedGroup.ID || len(ring.Rings) != 1 || ring.Rings[0].GroupID != copiedGroup.ID {
		t.Fatalf("ring: %+v", ring)
	}
	// Alert rules: no webhook secret; the signed one disabled.
	rules, err := s.ListAlertRules(ctx, o.ID)
	if err != nil || len(rules) != 2 {
		t.Fatalf("alert rules: %+v %v", rules, err)
	}
	for _, r := range rules {
		if r.HasWebhookSecret {
			t.Fatalf("the webhook secret was copied: %+v", r)
		}
		if r.Name == "Signed hook" && r.Enabled {
			t.Fatalf("a rule whose secret was left behind is enabled: %+v", r)
		}
		if r.Name == "Mail" && (!r.Enabled || r.EmailTo == nil || *r.EmailTo != "ops@example.com") {
			t.Fatalf("mail rule: %+v", r)
		}
	}
	// The Audit Trail of the new organization has org.create.
	entries, err := s.ListAudit(ctx, o.ID, store.AuditFilter{Action: "org.create", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Summary["template"] != "Template" {
		t.Fatalf("audit: %+v %v", entries, err)
	}

	// Isolated afterwards: changing the copy leaves the template alone,
	// and the other way round.
	newName := "Linux fleet"
	if _, err := s.PatchGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.update", TargetType: "group"}, o.ID, copiedGroup.ID,
		store.GroupChange{Name: &newName, Rules: &[]groups.Rule{{Field: "platform", Op: groups.OpEquals, Value: "windows"}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	off := false
	if _, err := s.SetApprovalPolicy(ctx, &store.AuditEntry{OrgID: tmpl.org.ID, Actor: "test", Action: "x", TargetType: "x"}, tmpl.org.ID,
		store.PolicyChange{DeclineOlder: &off, Rule: &updates.PolicyRule{Severity: "Critical", Source: "OS", DelayDays: 9}}); err != nil {
		t.Fatal(err)
	}
	tg, err := s.GetGroup(ctx, tmpl.org.ID, f.group, time.Now())
	if err != nil || tg.Name != "Linux servers" || tg.Rules[0].Value != "linux" {
		t.Fatalf("template group after the copy changed: %+v %v", tg, err)
	}
	p, err = s.GetApprovalPolicy(ctx, o.ID)
	if err != nil || !p.DeclineOlder || p.Rules[0].DelayDays != 3 {
		t.Fatalf("copy's approval policy after the template changed: %+v %v", p, err)
	}

	// Revoked: refused again.
	if _, err := s.SetCreateOrgs(ctx, ie(), creator.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := create("Client B", "", creator.ID); !errors.Is(err, store.ErrNoCreateOrgs) {
		t.Fatalf("after revocation: %v", err)
	}
}
