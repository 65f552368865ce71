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
	wantStatus(t, errOf(admin.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{EmailTo: ptr(""), WebhookURL: ptr("")})), http.StatusUnprocessableEntity, "patch leaving no channel")
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
	wantStatus(t, errOf(blind.GetAlertRule(ctx, id)), http.StatusForbidden, "get without reports.view")
	wantStatus(t, errOf(blind.ListAlertEvents(ctx, id, client.PageQuery{})), http.StatusForbidden, "events without reports.view")
	wantStatus(t, errOf(viewer.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr("v")})), http.StatusForbidden, "viewer patch")
	wantStatus(t, errOf(viewer.SetAlertRuleEnabled(ctx, id, false)), http.StatusForbidden, "viewer disable")
	wantStatus(t, errOf(viewer.TestAlertRule(ctx, id)), http.StatusForbidden, "viewer test")
	wantStatus(t, viewer.DeleteAlertRule(ctx, id), http.StatusForbidden, "viewer delete")
	wantStatus(t, errOf(other.GetAlertRule(ctx, id)), http.StatusNotFound, "other org get")
	wantStatus(t, errOf(other.UpdateAlertRule(ctx, id, apiv1.AlertRulePatch{Name: ptr("x")})), http.StatusNotFound, "other org patch")
	wantStatus(t, errOf(other.SetAlertRuleEnabled(ctx, id, false)), http.StatusNotFound, "other org disable")
	wantStatus(t, errOf(other.TestAlertRule(ctx, id)), http.StatusNotFound, "other org test")
	wantStatus(t, errOf(other.ListAlertEvents(ctx, id, client.PageQuery{})), http.StatusNotFound, "other org events")
	wantStatus(t, other.DeleteAlertRule(ctx, id), http.StatusNotFound, "other org delete")
	if r, err := admin.GetAlertRule(ctx, id); err != nil || !r.Enabled || r.Name != "offline 2" || r.Events != 3 {
		t.Fatalf("refused calls changed the rule: %+v %v", r, err)
	}

	// Delete, with its events.
	if err := admin.DeleteAlertRule(ctx, id); err != nil {
		t.Fatal(err)
	}
	auditedAs(t, e, e.Org, "alert.delete", cred.Name, id)
	mustStatus(t, errOf(admin.GetAlertRule(ctx, id)), http.StatusNotFound, "get after delete")
	mustStatus(t, admin.DeleteAlertRule(ctx, id), http.StatusNotFound, "delete twice")
}
