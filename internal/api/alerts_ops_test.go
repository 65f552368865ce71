package api_test

import (
	"net/http"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestAlertRuleOperations covers the patchd additions on one alert rule:
// get, patch, enable/disable, test, events (paged) and delete, audited as
// the credential, refused to a role without the permission (403), unseen
// from another organization (404), bad input changing nothing.
func TestAlertRuleOperations(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	cred, admin := e.CredentialClient(e.Org, perm.All)
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.ReportsView))
	blind := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.EndpointsView))
	other := e.Client(e.NewOrg("Other "+apitest.NewName()), perm.All)

	res, err := admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "offline", Trigger: "ENDPOINT_OFFLINE", EmailTo: ptr("ops@example.com"),
		WebhookURL: ptr("https://hooks.example.com/x"), WebhookSecret: ptr("s3cret-s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Rule.ID
	got, err := viewer.GetAlertRule(ctx, id)
	if err != nil || got.ID != id || got.Name != "offline" || !got.Enabled || !got.HasWebhookSecret || got.EmailTo == nil {
		t.Fatalf("get: %+v %v", got, err)
	}

	// Patch: only the given fields; "" removes an optional one.
	upd, err := admin.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr("offline 2"), Threshold: ptr(30), WebhookSecret: ptr("")})
	if err != nil || upd.Name != "offline 2" || upd.Threshold != 30 || upd.HasWebhookSecret || upd.WebhookURL == nil || upd.EmailTo == nil ||
		upd.Trigger != "ENDPOINT_OFFLINE" {
		t.Fatalf("patch: %+v %v", upd, err)
	}
	auditedAs(t, e, e.Org, "alert.update", cred.Name, id)

	// Bad input is refused and changes nothing.
	if _, err := admin.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr(" "), Threshold: ptr(-1)}); problemFields(err) == "" ||
		!client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("invalid patch: %v", err)
	}
	if _, err := admin.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{EmailTo: ptr(""), WebhookURL: ptr("")}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("patch leaving no channel: %v", err)
	}
	tok := tokenOf(t, admin)
	expectCalls(t, e, tok,
		rawCase{http.MethodPatch, "/api/v1/alerts/" + id, `{"name":`, http.StatusBadRequest, "invalid_json"},
		rawCase{http.MethodPatch, "/api/v1/alerts/" + id, `{"threshold":"ten"}`, http.StatusUnprocessableEntity, ""},
		rawCase{http.MethodGet, "/api/v1/alerts/" + id + "/events?limit=x", "", http.StatusBadRequest, ""})
	if now, _ := admin.GetAlertRule(ctx, id); now.Name != "offline 2" || now.Threshold != 30 || now.EmailTo == nil {
		t.Fatalf("a refused change changed the rule: %+v", now)
	}

	// Disable, enable.
	if r, err := admin.SetAlertRuleEnabled(ctx, id, false); err != nil || r.Enabled {
		t.Fatalf("disable: %+v %v", r, err)
	}
	auditedAs(t, e, e.Org, "alert.disable", cred.Name, id)
	if r, err := admin.SetAlertRuleEnabled(ctx, id, true); err != nil || !r.Enabled {
		t.Fatalf("enable: %+v %v", r, err)
	}
	auditedAs(t, e, e.Org, "alert.enable", cred.Name, id)

	// Test events, listed newest first in pages.
	var sent []string
	for range 3 {
		ev, err := admin.TestAlertRule(ctx, id)
		if err != nil || ev.Event != "TEST" || ev.RuleID != id {
			t.Fatalf("test: %+v %v", ev, err)
		}
		sent = append(sent, ev.ID)
	}
	auditedAs(t, e, e.Org, "alert.test", cred.Name, id)
	p1, err := viewer.ListAlertEvents(ctx, id, client.PageQuery{Limit: 2})
	if err != nil || p1.Total != 3 || len(p1.Items) != 2 || p1.Limit != 2 {
		t.Fatalf("events page 1: %+v %v", p1, err)
	}
	p2, err := viewer.ListAlertEvents(ctx, id, client.PageQuery{Limit: 2, Offset: 2})
	if err != nil || p2.Total != 3 || len(p2.Items) != 1 {
		t.Fatalf("events page 2: %+v %v", p2, err)
	}
	seen := map[string]bool{}
	for _, ev := range append(p1.Items, p2.Items...) {
		seen[ev.ID] = true
	}
	for _, s := range sent {
		if !seen[s] {
			t.Fatalf("event %s not listed: %+v %+v", s, p1, p2)
		}
	}

	// A role without the permission: 403; another organization: 404.
	if _, err := blind.GetAlertRule(ctx, id); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("get without reports.view: %v", err)
	}
	if _, err := blind.ListAlertEvents(ctx, id, client.PageQuery{}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("events without reports.view: %v", err)
	}
	if _, err := viewer.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr("v")}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("viewer patch: %v", err)
	}
	if _, err := viewer.SetAlertRuleEnabled(ctx, id, false); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("viewer disable: %v", err)
	}
	if _, err := viewer.TestAlertRule(ctx, id); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("viewer test: %v", err)
	}
	if err := viewer.DeleteAlertRule(ctx, id); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("viewer delete: %v", err)
	}
	if _, err := other.GetAlertRule(ctx, id); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org get: %v", err)
	}
	if _, err := other.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr("x")}); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org patch: %v", err)
	}
	if _, err := other.SetAlertRuleEnabled(ctx, id, false); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org disable: %v", err)
	}
	if _, err := other.TestAlertRule(ctx, id); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org test: %v", err)
	}
	if _, err := other.ListAlertEvents(ctx, id, client.PageQuery{}); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org events: %v", err)
	}
	if err := other.DeleteAlertRule(ctx, id); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("other org delete: %v", err)
	}
	if r, err := admin.GetAlertRule(ctx, id); err != nil || !r.Enabled || r.Name != "offline 2" || r.Events != 3 {
		t.Fatalf("refused calls changed the rule: %+v %v", r, err)
	}

	// Delete, with its events.
	if err := admin.DeleteAlertRule(ctx, id); err != nil {
		t.Fatal(err)
	}
	auditedAs(t, e, e.Org, "alert.delete", cred.Name, id)
	if _, err := admin.GetAlertRule(ctx, id); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := admin.DeleteAlertRule(ctx, id); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}
