package ctl_test

import (
	"encoding/csv"
	"strings"
	"testing"

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
