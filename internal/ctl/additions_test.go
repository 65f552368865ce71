package ctl_test

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
)

func TestScriptsCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var sc apiv1.Script
	h.okJSON(&sc, "scripts", "create", "--name", "spooler", "--language", "powershell", "--code", "Restart-Service Spooler",
		"--param", "DIR=C:\\spool", "--param", "KEY!=", "--reboot-exit-codes", "3010,1641", "--timeout", "5m")
	if sc.ID == "" || len(sc.Parameters) != 2 || !sc.Parameters[1].Required || len(sc.RebootExitCodes) != 2 || sc.TimeoutSeconds != 300 {
		t.Fatalf("created %+v", sc)
	}
	r := h.run("echo hi\n", "scripts", "update", "spooler", "--code-file", "-", "--no-params", "--reboot-exit-codes", "")
	if r.code != 0 || !strings.Contains(r.stdout, "Script spooler updated.") {
		t.Fatalf("update: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var got apiv1.Script
	h.okJSON(&got, "scripts", "get", sc.ID)
	if got.Code != "echo hi\n" || len(got.Parameters) != 0 || len(got.RebootExitCodes) != 0 || got.TimeoutSeconds != 300 {
		t.Fatalf("after update %+v", got)
	}
	if table := h.ok("scripts", "list"); !strings.Contains(table, "spooler") || !strings.Contains(table, "LANGUAGE") {
		t.Errorf("table:\n%s", table)
	}
	rows, err := csv.NewReader(strings.NewReader(h.ok("scripts", "list", "-o", "csv"))).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][0] != sc.ID {
		t.Errorf("csv %v %v", rows, err)
	}
	if pairs := h.ok("scripts", "get", "spooler"); !strings.Contains(pairs, "echo hi") {
		t.Errorf("get:\n%s", pairs)
	}
	h.fail(ctl.ExitUsage, "needs --name", "scripts", "create", "--name", "x")
	h.fail(ctl.ExitUsage, "nothing to change", "scripts", "update", "spooler")
	h.fail(ctl.ExitUsage, "not an integer", "scripts", "update", "spooler", "--reboot-exit-codes", "x")
	h.fail(ctl.ExitAPI, "validation_failed", "scripts", "create", "--name", "y", "--language", "cobol", "--code", "x")
	h.ok("scripts", "delete", "spooler")
	h.fail(ctl.ExitAPI, "not_found", "scripts", "get", sc.ID)
}

func TestEnrollTokenCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var tok apiv1.NewEnrollToken
	h.okJSON(&tok, "enroll-tokens", "create", "--expires", "24h")
	if tok.ID == "" || !strings.HasPrefix(tok.Token, "pde_") || tok.ExpiresAt == nil {
		t.Fatalf("created %+v", tok)
	}
	if out := h.ok("enroll-tokens", "create"); !strings.Contains(out, "Token:") || !strings.Contains(out, "pde_") {
		t.Errorf("table create:\n%s", out)
	}
	var list []apiv1.EnrollToken
	h.okJSON(&list, "enroll-tokens", "list")
	if len(list) != 3 {
		t.Fatalf("list %+v", list)
	}
	h.ok("enroll-tokens", "revoke", tok.ID)
	rows, err := csv.NewReader(strings.NewReader(h.ok("enroll-tokens", "list", "-o", "csv"))).ReadAll()
	if err != nil || len(rows) != 4 || rows[0][4] != "REVOKED" {
		t.Fatalf("csv %v %v", rows, err)
	}
	for _, r := range rows[1:] {
		if r[0] == tok.ID && r[4] != "true" {
			t.Errorf("not revoked: %v", r)
		}
	}
	h.fail(ctl.ExitUsage, "whole number of hours", "enroll-tokens", "create", "--expires", "90m")
	h.fail(ctl.ExitAPI, "not_found", "enroll-tokens", "revoke", "nope")
	h.login(perm.ReadOnly)
	h.fail(ctl.ExitAPI, "insufficient_scope", "enroll-tokens", "list")
}

func TestAuditCommand(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	for _, name := range []string{"a", "b", "c"} {
		h.ok("scripts", "create", "--name", name, "--language", "sh", "--code", "true")
	}
	h.ok("scripts", "delete", "b")
	var entries []apiv1.AuditEntry
	h.okJSON(&entries, "audit", "list", "--action", "script.create", "--since", "1h", "--page-size", "2")
	if len(entries) != 3 || entries[0].Summary["name"] != "c" || !strings.HasPrefix(entries[0].Actor, "api:") {
		t.Fatalf("entries %+v", entries)
	}
	h.okJSON(&entries, "audit", "list", "--actor", entries[0].Actor, "--limit", "1")
	if len(entries) != 1 || entries[0].Action != "script.delete" {
		t.Fatalf("newest of the actor: %+v", entries)
	}
	rows, err := csv.NewReader(strings.NewReader(h.ok("audit", "list", "--until", "2000-01-01", "-o", "csv"))).ReadAll()
	if err != nil || len(rows) != 1 || rows[0][2] != "ACTION" {
		t.Fatalf("csv before 2000: %v %v", rows, err)
	}
	if table := h.ok("audit", "list", "--action", "script.delete"); !strings.Contains(table, "script.delete") || !strings.Contains(table, `{"name":"b"}`) {
		t.Errorf("table:\n%s", table)
	}
	h.fail(ctl.ExitUsage, "--since", "audit", "list", "--since", "last tuesday")
}

func TestRunShowStopRetry(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	a1, a2 := e.Enroll("m1", "host-1", "linux"), e.Enroll("m2", "host-2", "linux")
	var started apiv1.RunStarted
	h.okJSON(&started, "actions", "run", "--type", "REBOOT", "--endpoints", a1.ID+","+a2.ID)
	for _, ag := range []*apitest.Agent{a1, a2} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		if len(resp.Commands) != 1 {
			t.Fatalf("commands: %+v", resp.Commands)
		}
		ag.Status(resp.Commands[0].ID, "FAILED", "no", nil)
	}
	var run apiv1.Run
	h.okJSON(&run, "runs", "show", started.RunID)
	if run.Status != "FAILED" || run.Failed != 2 {
		t.Fatalf("show: %+v", run)
	}
	if out := h.ok("runs", "show", started.RunID); !strings.Contains(out, "Failed:") || !strings.Contains(out, "FAILED") {
		t.Errorf("show table:\n%s", out)
	}
	var retry apiv1.RunStarted
	h.okJSON(&retry, "runs", "retry", started.RunID)
	if retry.Queued != 2 {
		t.Fatalf("retry %+v", retry)
	}
	rows, err := csv.NewReader(strings.NewReader(h.ok("runs", "stop", retry.RunID, "-o", "csv"))).ReadAll()
	if err != nil || len(rows) != 1 || !strings.Contains(rows[0][0], "stopped") {
		t.Fatalf("stop: %v %v", rows, err)
	}
	h.okJSON(&run, "runs", "show", retry.RunID)
	if run.Status != "STOPPED" {
		t.Fatalf("after stop %+v", run)
	}
	h.fail(ctl.ExitAPI, "run_not_running", "runs", "stop", retry.RunID)
	h.fail(ctl.ExitAPI, "no_failed_endpoints", "runs", "retry", retry.RunID)
	h.fail(ctl.ExitAPI, "not_found", "runs", "show", "nope")
}

// TestAgentsCommands: patchctl agents versions shows the fleet's agent
// versions and update failures; agents policy set sets the policy the API
// answers, refuses a wrong combination of flags before asking, and the
// server's refusal of a bad version is an API error.
func TestAgentsCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	ag := e.Enroll("uid-ctl-agent", "web-ctl", "linux")
	if _, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0", IPAddresses: []string{},
		UpdateFailure: &agentproto.UpdateFailure{Version: "2.0.0", Reason: "the new agent does not start"}}); ans.Status != 200 {
		t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
	}
	e.Server.Presence().Flush(t.Context())

	out := h.ok("agents", "versions")
	for _, want := range []string{"Policy:", "none", "AGENT VERSION", "1.0.0", "web-ctl", "the new agent does not start"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents versions lacks %q:\n%s", want, out)
		}
	}
	var v apiv1.AgentVersions
	h.okJSON(&v, "agents", "policy", "set", "--policy", "pinned", "--version", "1.2.0")
	if v.Policy != "pinned" || v.Target == nil || *v.Target != "1.2.0" || v.Behind != 1 || v.Endpoints != 1 {
		t.Fatalf("policy set: %+v", v)
	}
	if out := h.ok("agents", "policy", "set", "--policy", "latest"); !strings.Contains(out, "set to latest") {
		t.Errorf("policy set latest: %q", out)
	}
	h.okJSON(&v, "agents", "versions")
	if v.Policy != "latest" || len(v.Failures) != 1 {
		t.Fatalf("versions after latest: %+v", v)
	}
	h.fail(ctl.ExitUsage, "--policy pinned --version", "agents", "policy", "set", "--policy", "pinned")
	h.fail(ctl.ExitUsage, "--policy pinned --version", "agents", "policy", "set", "--policy", "latest", "--version", "1")
	h.fail(ctl.ExitAPI, "validation_failed", "agents", "policy", "set", "--policy", "pinned", "--version", "1 2")
	h.fail(ctl.ExitUsage, "agents policy set", "agents", "policy", "--policy", "latest")

	// Staged through the group "Pilot" (by name), then the rest.
	h.ok("groups", "create", "--name", "Pilot", "--member", ag.ID)
	h.okJSON(&v, "agents", "policy", "set", "--policy", "staged", "--version", "3.0.0", "--ring", "Pilot", "--delay", "2d", "--success-rate", "90")
	if v.Policy != "staged" || v.Rollout == nil || v.Rollout.DelayHours != 48 || v.Rollout.SuccessRate != 90 || len(v.Rollout.Rings) != 2 ||
		*v.Rollout.Rings[0].GroupName != "Pilot" || v.Rollout.Rings[0].State != "rolling_out" || v.Rollout.Rings[1].State != "waiting" {
		t.Fatalf("staged: %+v", v.Rollout)
	}
	out = h.ok("agents", "versions")
	for _, want := range []string{"Staged rollout of 3.0.0", "48 hours", "Pilot", "rolling out", "(all other endpoints)", "waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents versions lacks %q:\n%s", want, out)
		}
	}
	h.fail(ctl.ExitUsage, "--policy staged --version V --ring", "agents", "policy", "set", "--policy", "staged", "--version", "2", "--ring", "Pilot")
	h.fail(ctl.ExitUsage, "--policy staged --version V --ring", "agents", "policy", "set", "--policy", "latest", "--ring", "Pilot")
	h.fail(ctl.ExitUsage, "--delay wants hours or days", "agents", "policy", "set", "--policy", "staged", "--version", "2", "--ring", "Pilot", "--delay", "soon", "--success-rate", "5")
	h.fail(ctl.ExitAPI, "validation_failed", "agents", "policy", "set", "--policy", "staged", "--version", "2", "--ring", "Nope", "--delay", "1h", "--success-rate", "5")
}
