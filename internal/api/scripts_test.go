package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// auditedAs asserts the organization's latest entry of action was written
// by the credential as api:<name>, about targetID.
func auditedAs(t *testing.T, e *apitest.Env, org store.Org, action, credential, targetID string) store.AuditEntry {
	t.Helper()
	entries, err := e.Store.ListAudit(context.Background(), org.ID, store.AuditFilter{Action: action, Limit: 1})
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit of %s: %+v %v", action, entries, err)
	}
	if en := entries[0]; en.Actor != "api:"+credential || (targetID != "" && en.TargetID != targetID) {
		t.Fatalf("audit of %s: actor %q target %q, want api:%s %s", action, en.Actor, en.TargetID, credential, targetID)
	}
	return entries[0]
}

func TestScriptsLibrary(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	cred, admin := e.CredentialClient(e.Org, perm.All)
	viewer := e.Client(e.Org, perm.ReadOnly)
	other := e.Client(e.NewOrg("Other"), perm.All)

	created, err := admin.CreateScript(ctx, apiv1.ScriptBody{Name: str(" spooler "), Language: str("pwsh"), Code: str("Restart-Service Spooler"),
		Parameters:      &[]apiv1.ScriptParameter{{Name: "DIR", Default: `C:\spool`}, {Name: "KEY", Required: true}},
		RebootExitCodes: &[]int{3010, 1641}, TimeoutSeconds: intp(300)})
	if err != nil || created.Name != "spooler" || created.Language != "powershell" || len(created.Parameters) != 2 || !created.Parameters[1].Required ||
		len(created.RebootExitCodes) != 2 || created.TimeoutSeconds != 300 || created.ID == "" {
		t.Fatalf("create: %+v %v", created, err)
	}
	auditedAs(t, e, e.Org, "script.create", cred.Name, created.ID)

	// Read by id and by name; the read-only role can read.
	for _, ref := range []string{created.ID, "spooler"} {
		got, err := viewer.GetScript(ctx, ref)
		if err != nil || got.ID != created.ID || got.Code != "Restart-Service Spooler" {
			t.Fatalf("get %s: %+v %v", ref, got, err)
		}
	}
	list, err := viewer.ListScripts(ctx)
	if err != nil || list.Total != 1 || list.Items[0].ID != created.ID {
		t.Fatalf("list: %+v %v", list, err)
	}

	// A run of the stored script uses its code, defaults and exit codes.
	w1 := e.Enroll("w1", "win-01", "windows")
	if _, err := admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{w1.ID},
		Payload: json.RawMessage(`{"scriptId":"` + created.ID + `","parameters":{"KEY":"k"}}`)}); err != nil {
		t.Fatalf("run the stored script: %v", err)
	}

	// Update: only the given fields change; lists are replaced whole.
	updated, err := admin.UpdateScript(ctx, created.ID, apiv1.ScriptBody{RebootExitCodes: &[]int{}, TimeoutSeconds: intp(600)})
	if err != nil || updated.Name != "spooler" || updated.Code != created.Code || len(updated.RebootExitCodes) != 0 || updated.TimeoutSeconds != 600 ||
		len(updated.Parameters) != 2 || !updated.UpdatedAt.After(created.UpdatedAt.Add(-1)) {
		t.Fatalf("update: %+v %v", updated, err)
	}
	auditedAs(t, e, e.Org, "script.update", cred.Name, created.ID)

	// Bad input: every problem at once, nothing changed.
	if _, err := admin.CreateScript(ctx, apiv1.ScriptBody{Name: str("second"), Language: str("bash"), Code: str("true")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		create bool
		body   apiv1.ScriptBody
		want   string
	}{
		{"empty create", true, apiv1.ScriptBody{}, "validation_failed:name,language,code"},
		{"bad values", true, apiv1.ScriptBody{Name: str("x"), Language: str("cobol"), Code: str(" "), TimeoutSeconds: intp(-1),
			Parameters: &[]apiv1.ScriptParameter{{Name: "A"}, {Name: " A "}, {Name: ""}}},
			"validation_failed:language,code,parameters[1].name,parameters[2].name,timeoutSeconds"},
		{"name taken", true, apiv1.ScriptBody{Name: str("spooler"), Language: str("sh"), Code: str("true")}, "validation_failed:name"},
		{"rename to a taken name", false, apiv1.ScriptBody{Name: str("second")}, "validation_failed:name"},
		{"timeout too long", false, apiv1.ScriptBody{TimeoutSeconds: intp(86401)}, "validation_failed:timeoutSeconds"},
		{"exit code", false, apiv1.ScriptBody{RebootExitCodes: &[]int{1 << 40}}, "validation_failed:rebootExitCodes[0]"},
		{"empty name", false, apiv1.ScriptBody{Name: str("  ")}, "validation_failed:name"},
	} {
		var err error
		if c.create {
			_, err = admin.CreateScript(ctx, c.body)
		} else {
			_, err = admin.UpdateScript(ctx, created.ID, c.body)
		}
		if got := problemFields(err); got != c.want {
			t.Errorf("%s: %s (%v)", c.name, got, err)
		}
	}
	tok := tokenOf(t, admin)
	for _, m := range []string{http.MethodPost, http.MethodPatch} {
		path := "/api/v1/scripts"
		if m == http.MethodPatch {
			path += "/" + created.ID
		}
		expectCalls(t, e, tok,
			rawCase{m, path, `{"name":`, http.StatusBadRequest, "invalid_json"},
			rawCase{m, path, `{"name":"x","language":"sh","code":"true","timeoutSeconds":"long"}`, http.StatusUnprocessableEntity, ""})
	}
	if got, _ := admin.GetScript(ctx, created.ID); got.TimeoutSeconds != 600 || got.Name != "spooler" || len(got.RebootExitCodes) != 0 {
		t.Fatalf("a refused change changed the script: %+v", got)
	}

	// The read-only role may not write (403); another organization sees nothing (404).
	wantStatus(t, errOf(viewer.CreateScript(ctx, apiv1.ScriptBody{Name: str("v"), Language: str("sh"), Code: str("true")})), http.StatusForbidden, "viewer create")
	wantStatus(t, errOf(viewer.UpdateScript(ctx, created.ID, apiv1.ScriptBody{TimeoutSeconds: intp(1)})), http.StatusForbidden, "viewer update")
	wantStatus(t, viewer.DeleteScript(ctx, created.ID), http.StatusForbidden, "viewer delete")
	noAutomations := e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	wantStatus(t, errOf(noAutomations.ListScripts(ctx)), http.StatusForbidden, "list without automations.view")
	wantStatus(t, errOf(other.GetScript(ctx, created.ID)), http.StatusNotFound, "other org get")
	wantStatus(t, errOf(other.UpdateScript(ctx, "spooler", apiv1.ScriptBody{TimeoutSeconds: intp(1)})), http.StatusNotFound, "other org update")
	wantStatus(t, other.DeleteScript(ctx, created.ID), http.StatusNotFound, "other org delete")
	if l, err := other.ListScripts(ctx); err != nil || l.Total != 0 {
		t.Errorf("other org list: %+v %v", l, err)
	}

	// Delete, by name.
	if err := admin.DeleteScript(ctx, "spooler"); err != nil {
		t.Fatal(err)
	}
	auditedAs(t, e, e.Org, "script.delete", cred.Name, created.ID)
	mustStatus(t, errOf(admin.GetScript(ctx, created.ID)), http.StatusNotFound, "get after delete")
	if err := admin.DeleteScript(ctx, created.ID); !client.IsStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("delete twice: %v", err)
	}
}

func scriptBody(name string) apiv1.ScriptBody {
	return apiv1.ScriptBody{Name: &name, Language: str("sh"), Code: str("true")}
}

func joinStrings(s []string) string { return strings.Join(s, ",") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
