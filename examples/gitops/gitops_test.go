package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestGitOps: the example folder (config/) is planned in a dry run without
// a change, applied (the automation gets the id of the group the same run
// created), then is unchanged; an edited file is an update showing the
// field; --prune deletes what has no file and leaves built-in groups; a
// file with an unknown field is refused before any call.
func TestGitOps(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	cred := e.Credential(e.Org, perm.All)
	env := map[string]string{"PATCHD_SERVER": e.URL, "PATCHD_CLIENT_ID": cred.ClientID, "PATCHD_CLIENT_SECRET": cred.ClientSecret}
	sync := func(dir string, flags ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"--dir", dir}, flags...), func(k string) string { return env[k] }, &out, e.HTTPClient); err != nil {
			t.Fatalf("gitops %v: %v\n%s", flags, err, out.String())
		}
		return out.String()
	}
	contains := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the output lacks %q:\n%s", w, out)
			}
		}
	}
	groupNamed := func(name string) *apiv1.Group {
		gs, err := e.Admin.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs.Items {
			if g.Name == name {
				return &g
			}
		}
		return nil
	}

	// A copy of the example folder, to edit.
	dir := t.TempDir()
	for _, sub := range []string{"groups", "automations", "alerts"} {
		files, _ := filepath.Glob(filepath.Join("config", sub, "*.json"))
		if len(files) == 0 {
			t.Fatalf("config/%s has no example", sub)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, sub, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := sync(dir, "--dry-run")
	contains(out, `+ group "Web servers"`, `+ automation "Patch Tuesday (web)"`, `+ alert "Endpoint offline"`, "3 to create, 0 to update, 0 to delete", "Dry run: nothing was changed.")
	if groupNamed("Web servers") != nil {
		t.Fatal("the dry run created the group")
	}

	out = sync(dir)
	contains(out, "3 to create")
	web := groupNamed("Web servers")
	if web == nil || web.Kind != "DYNAMIC" || len(web.Rules) != 2 {
		t.Fatalf("group: %+v", web)
	}
	autos, err := e.Admin.ListAutomations(ctx)
	if err != nil || len(autos.Items) != 1 || autos.Items[0].GroupID == nil || *autos.Items[0].GroupID != web.ID {
		t.Fatalf("automation: %+v %v", autos, err)
	}
	rules, err := e.Admin.ListAlertRules(ctx)
	if err != nil || len(rules.Items) != 1 || rules.Items[0].Threshold != 60 {
		t.Fatalf("alert rules: %+v %v", rules, err)
	}

	// Applied: nothing left to do (the server's defaults are no difference).
	contains(sync(dir, "--dry-run"), "0 to create, 0 to update, 0 to delete, 3 unchanged.")

	// An edit is an update of the fields that changed.
	alert := filepath.Join(dir, "alerts", "offline.json")
	data, _ := os.ReadFile(alert)
	if err := os.WriteFile(alert, bytes.Replace(data, []byte(`"threshold": 60`), []byte(`"threshold": 120`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out = sync(dir, "--dry-run")
	contains(out, `~ alert "Endpoint offline"`, "threshold: 60 → 120", "0 to create, 1 to update")
	sync(dir)
	if rules, _ := e.Admin.ListAlertRules(ctx); rules.Items[0].Threshold != 120 {
		t.Fatalf("threshold after the update: %+v", rules.Items[0])
	}

	// --prune: what has no file goes, built-in groups stay.
	stray := "Stray"
	if _, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: &stray}); err != nil {
		t.Fatal(err)
	}
	if out := sync(dir, "--dry-run"); strings.Contains(out, "Stray") {
		t.Errorf("without --prune the plan names the stray group:\n%s", out)
	}
	out = sync(dir, "--prune")
	contains(out, `- group "Stray"`, "1 to delete")
	if groupNamed("Stray") != nil {
		t.Fatal("--prune left the stray group")
	}
	gs, _ := e.Admin.ListGroups(ctx)
	system := 0
	for _, g := range gs.Items {
		if g.System {
			system++
		}
	}
	if system == 0 {
		t.Fatal("--prune deleted the built-in groups")
	}

	// A typo is refused before anything is sent.
	if err := os.WriteFile(filepath.Join(dir, "groups", "typo.json"), []byte(`{"name":"Typo","rulez":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = run(ctx, []string{"--dir", dir}, func(k string) string { return env[k] }, &buf, e.HTTPClient)
	if err == nil || !strings.Contains(err.Error(), "rulez") || buf.Len() != 0 || groupNamed("Typo") != nil {
		t.Fatalf("a file with an unknown field: %v\n%s", err, buf.String())
	}
}
