package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

func TestAutomationsCRUD(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	w1 := e.Enroll("w1", "win-01", "windows")
	w2 := e.Enroll("w2", "win-02", "windows")
	other := e.NewOrg("Other")
	otherAdmin := e.Client(other, perm.All)
	viewer := e.Client(e.Org, perm.ReadOnly)
	runner := e.Client(e.Org, perm.Set(perm.APIAccess|perm.AutomationsRun|perm.AutomationsView))

	// A daily automation on every endpoint: targetMode all is the built-in All endpoints group.
	created, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Nightly reboot", ActionType: "REBOOT", Kind: str("SCHEDULED"),
		Payload: json.RawMessage(`{"message":"bye","timeoutSeconds":60}`), TargetMode: str("all"), ScheduleKind: str("RECURRING"),
		Freq: str("DAILY"), AtTime: str("23:30"), WindowMinutes: intp(60), Description: str("keeps them fresh")})
	if err != nil || !created.OK || created.Automation.RunID != nil || created.Automation.Queued != 0 {
		t.Fatalf("create: %+v %v", created, err)
	}
	id := created.Automation.ID
	allID, err := e.Store.BuiltinGroupID(ctx, e.Org.ID, "all")
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.Admin.GetAutomation(ctx, id)
	if err != nil || a.Kind != "SIMPLE" || a.TargetMode != "GROUP" || a.GroupID == nil || *a.GroupID != allID || a.Action != "REBOOT" ||
		a.ActionLabel != "Reboot" || *a.Freq != "DAILY" || *a.AtTime != "23:30" || *a.WindowMinutes != 60 || !a.Enabled || a.NextRunAt == nil ||
		a.LastRunAt != nil || a.CreatedBy == nil || string(a.Payload) != `{"message":"bye","timeoutSeconds":60}` || *a.Description != "keeps them fresh" {
		t.Fatalf("get: %+v %v", a, err)
	}
	if next := a.NextRunAt.UTC(); next.Hour() != 23 || next.Minute() != 30 || !next.After(time.Now()) || time.Until(next) > 24*time.Hour {
		t.Fatalf("nextRunAt %s", next)
	}
	list, err := e.Admin.ListAutomations(ctx)
	if err != nil || list.Total != 1 || list.Items[0].ID != id || list.Items[0].Payload != nil {
		t.Fatalf("list: %+v %v", list, err)
	}

	// Validation: every problem at once, with its field.
	for _, c := range []struct {
		name string
		body apiv1.AutomationBody
		want string
	}{
		{"monthDay 29, bad atTime", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("all"), ScheduleKind: str("RECURRING"), Freq: str("MONTHLY"), MonthDay: intp(29), AtTime: str("25:00")},
			"validation_failed:atTime,monthDay"},
		{"weekday 7", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("all"), Freq: str("WEEKLY"), Weekday: intp(7), AtTime: str("01:00")}, "validation_failed:weekday"},
		{"unknown group and window", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("group"), GroupID: str("nope"), ScheduleKind: str("NOW"), WindowMinutes: intp(0)},
			"validation_failed:windowMinutes,groupId"},
		{"foreign endpoint", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("endpoints"), EndpointIDs: []string{w1.ID, "nope"}, ScheduleKind: str("NOW")},
			"validation_failed:endpointIds[1]"},
		{"no name, bad action", apiv1.AutomationBody{ActionType: "FLY", TargetMode: str("all"), ScheduleKind: str("NOW")}, "validation_failed:name,actionType"},
		{"payload", apiv1.AutomationBody{Name: "x", ActionType: "UNINSTALL_SOFTWARE", TargetMode: str("all"), ScheduleKind: str("NOW")}, "validation_failed:payload.name"},
		{"no schedule", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("all")}, "validation_failed:scheduleKind"},
		{"past once", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("all"), ScheduleKind: str("ONCE"), RunAt: str("2020-01-01T00:00:00Z")}, "validation_failed:runAt"},
		{"ring without rings", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", Kind: str("RING")}, "validation_failed:startDate,rings"},
		{"ring group", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", Kind: str("RING"), StartDate: str("2030-01-01"),
			Rings: []apiv1.Ring{{Name: "a", GroupID: "nope"}}, Payload: json.RawMessage(`{"minSuccessRate":150}`)}, "validation_failed:rings[0].groupId,payload.minSuccessRate"},
		{"bad kind", apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", Kind: str("LOOP"), TargetMode: str("all"), ScheduleKind: str("NOW")}, "validation_failed:kind"},
	} {
		_, err := e.Admin.CreateAutomation(ctx, c.body)
		if got := problemFields(err); got != c.want {
			t.Errorf("%s: %s (%v)", c.name, got, err)
		}
	}

	// NOW runs at once and answers the run; the run belongs to the automation.
	now, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Script now", ActionType: "RUN_SCRIPT", TargetMode: str("endpoints"),
		EndpointIDs: []string{w1.ID, w2.ID}, ScheduleKind: str("NOW"), Payload: json.RawMessage(`{"script":"uptime","language":"sh"}`)})
	if err != nil || now.Automation.RunID == nil || now.Automation.Queued != 2 {
		t.Fatalf("NOW: %+v %v", now, err)
	}
	run, cmds := runOf(t, e.Admin, *now.Automation.RunID)
	if *run.AutomationID != now.Automation.ID || *run.AutomationName != "Script now" || len(cmds) != 2 {
		t.Fatalf("NOW run: %+v", run)
	}
	if byAuto, err := e.Admin.ListRuns(ctx, client.RunQuery{AutomationID: now.Automation.ID}); err != nil || byAuto.Total != 1 {
		t.Fatalf("runs of the automation: %+v %v", byAuto, err)
	}
	if a, _ := e.Admin.GetAutomation(ctx, now.Automation.ID); a.LastRunAt == nil || a.NextRunAt != nil || *a.ScheduleKind != "NOW" || len(a.EndpointIDs) != 2 {
		t.Fatalf("NOW automation: %+v", a)
	}
	// A DEPLOY_UPDATES NOW with nothing to install anywhere is 422 nothing_to_install.
	var apiErr *client.Error
	_, err = e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Patch", ActionType: "DEPLOY_UPDATES", TargetMode: str("all"), ScheduleKind: str("NOW")})
	if !asErr(err, &apiErr) || apiErr.Code != "nothing_to_install" {
		t.Fatalf("NOW nothing to install: %v", err)
	}

	// Run now (operation 22) on the automation's targets as they are now.
	rs, err := runner.RunAutomation(ctx, id)
	if err != nil || rs.Queued != 2 || rs.RunID == "" {
		t.Fatalf("run now: %+v %v", rs, err)
	}
	if a, _ := e.Admin.GetAutomation(ctx, id); a.LastRunAt == nil {
		t.Fatal("lastRunAt after run now")
	}

	// PATCH light: disable (nextRunAt null), rename; re-enable recomputes.
	res, err := e.Admin.PatchAutomation(ctx, id, apiv1.AutomationPatch{Enabled: boolp(false), Name: str("Nightly reboot (paused)")})
	if err != nil || res.Automation.Name != "Nightly reboot (paused)" {
		t.Fatalf("patch: %+v %v", res, err)
	}
	if a, _ := e.Admin.GetAutomation(ctx, id); a.Enabled || a.NextRunAt != nil || a.Name != "Nightly reboot (paused)" || *a.Freq != "DAILY" {
		t.Fatalf("after patch: %+v", a)
	}
	if _, err := e.Admin.PatchAutomation(ctx, id, apiv1.AutomationPatch{Enabled: boolp(true)}); err != nil {
		t.Fatal(err)
	}
	if a, _ := e.Admin.GetAutomation(ctx, id); !a.Enabled || a.NextRunAt == nil {
		t.Fatalf("re-enabled: %+v", a)
	}
	if _, err := e.Admin.PatchAutomation(ctx, id, apiv1.AutomationPatch{Name: str(" ")}); problemFields(err) != "validation_failed:name" {
		t.Fatalf("empty name: %v", err)
	}
	// PATCH with actionType replaces every field.
	res, err = e.Admin.PatchAutomation(ctx, id, apiv1.AutomationBody{Name: "Patch Tuesday", ActionType: "DEPLOY_UPDATES", TargetMode: str("endpoints"),
		EndpointIDs: []string{w2.ID}, ScheduleKind: str("RECURRING"), Freq: str("PATCH_TUESDAY"), OffsetDays: intp(2), AtTime: str("03:00"),
		Payload: json.RawMessage(`{"mode":"filters","approvalMode":"approved","filters":{"severities":["Critical","Important"]}}`)})
	if err != nil || res.Automation.Name != "Patch Tuesday" {
		t.Fatalf("replace: %+v %v", res, err)
	}
	a, _ = e.Admin.GetAutomation(ctx, id)
	if a.Action != "DEPLOY_UPDATES" || a.TargetMode != "ENDPOINTS" || a.GroupID != nil || *a.Freq != "PATCH_TUESDAY" || a.OffsetDays != 2 ||
		a.WindowMinutes != nil || a.Description != nil || a.NextRunAt == nil || a.NextRunAt.UTC().Weekday() != time.Thursday {
		t.Fatalf("replaced: %+v", a)
	}
	if _, err := e.Admin.PatchAutomation(ctx, id, apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("all"), Freq: str("DAILY")}); problemFields(err) != "validation_failed:atTime" {
		t.Fatalf("replace validation: %v", err)
	}

	// Permissions and isolation.
	mustStatus(t, errOf(viewer.CreateAutomation(ctx, apiv1.AutomationBody{Name: "x", ActionType: "REBOOT"})), 403, "viewer create")
	mustStatus(t, errOf(viewer.RunAutomation(ctx, id)), 403, "viewer run")
	mustStatus(t, errOf(runner.PatchAutomation(ctx, id, apiv1.AutomationPatch{Enabled: boolp(false)})), 403, "runner patch")
	mustStatus(t, viewer.DeleteAutomation(ctx, id), 403, "viewer delete")
	if l, err := viewer.ListAutomations(ctx); err != nil || l.Total != 2 {
		t.Fatalf("viewer list: %+v %v", l, err)
	}
	mustStatus(t, errOf(otherAdmin.GetAutomation(ctx, id)), 404, "other get")
	mustStatus(t, errOf(otherAdmin.PatchAutomation(ctx, id, apiv1.AutomationPatch{Enabled: boolp(false)})), 404, "other patch")
	mustStatus(t, errOf(otherAdmin.RunAutomation(ctx, id)), 404, "other run")
	mustStatus(t, otherAdmin.DeleteAutomation(ctx, id), 404, "other delete")
	if l, err := otherAdmin.ListAutomations(ctx); err != nil || l.Total != 0 {
		t.Fatalf("other list: %+v %v", l, err)
	}
	// A target group in another organization is refused.
	if _, err := otherAdmin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "x", ActionType: "REBOOT", TargetMode: str("group"), GroupID: &allID, ScheduleKind: str("NOW")}); problemFields(err) != "validation_failed:groupId" {
		t.Fatalf("foreign group: %v", err)
	}

	// Run now of a DEPLOY_UPDATES automation with nothing to install records its run.
	rs, err = e.Admin.RunAutomation(ctx, id)
	if err != nil || rs.Queued != 0 {
		t.Fatalf("run now, nothing to install: %+v %v", rs, err)
	}
	run, cmds = runOf(t, e.Admin, rs.RunID)
	if run.Status != "COMPLETED" || cmds[w2.ID].Status != "CANCELLED" {
		t.Fatalf("empty run: %+v %+v", run, cmds)
	}

	// Delete: gone, its runs stay.
	if err := e.Admin.DeleteAutomation(ctx, id); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, errOf(e.Admin.GetAutomation(ctx, id)), 404, "deleted")
	mustStatus(t, e.Admin.DeleteAutomation(ctx, id), 404, "delete twice")
	mustStatus(t, errOf(e.Admin.RunAutomation(ctx, "nope")), 404, "run unknown")
	if l, _ := e.Admin.ListRuns(ctx, client.RunQuery{AutomationID: id}); l.Total != 2 {
		t.Fatalf("runs of a deleted automation: %+v", l)
	}
	// The Audit Trail has the writes.
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, storeAuditFilter("automation.replace"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit: %+v %v", entries, err)
	}

	// RING: stored with its rings and gate; the first ring's slot is its nextRunAt.
	ring, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Rollout", ActionType: "REBOOT", Kind: str("RING"), StartDate: str("2030-03-01"),
		AtTime: str("02:00"), Rings: []apiv1.Ring{{Name: "Pilot", GroupID: allID}, {Name: "Broad", GroupID: allID, OffsetDays: 3}},
		Payload: json.RawMessage(`{"minSuccessRate":90}`)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ = e.Admin.GetAutomation(ctx, ring.Automation.ID)
	var payload map[string]any
	json.Unmarshal(a.Payload, &payload)
	if a.Kind != "RING" || len(a.Rings) != 2 || *a.StartDate != "2030-03-01" || a.NextRunAt == nil || !a.NextRunAt.Equal(time.Date(2030, 3, 1, 2, 0, 0, 0, time.UTC)) ||
		payload["minSuccessRate"] != 0.9 {
		t.Fatalf("ring: %+v %s", a, a.Payload)
	}
}

func boolp(b bool) *bool { return &b }

func storeAuditFilter(action string) store.AuditFilter { return store.AuditFilter{Action: action} }
