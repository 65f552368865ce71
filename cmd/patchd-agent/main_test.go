package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
)

// TestNoServerImports holds the line of docs/design/style.md: the agent imports
// nothing of the server.
func TestNoServerImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/patchd/patchd/cmd/patchd-agent", "github.com/patchd/patchd/agent/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list gave too little: %q", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/patchd/patchd/internal") {
			t.Errorf("the agent depends on server package %s", d)
		}
	}
	for _, goos := range []string{"windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/patchd/patchd/cmd/patchd-agent")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", goos, err, out)
		}
		if strings.Contains(string(out), "github.com/patchd/patchd/internal") {
			t.Errorf("%s build depends on server packages", goos)
		}
	}
}

func TestCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "patchd-agent ") {
		t.Errorf("version: %d %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"install", "--dry-run", "--state", "/var/lib/patchd-agent"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "to /usr/local/bin/patchd-agent (mode 0755)") || !strings.Contains(out.String(), "/var/lib/patchd-agent") {
		t.Errorf("install --dry-run: %d %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"uninstall", "--dry-run", "--state", "/tmp/x"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "remove /tmp/x") {
		t.Errorf("uninstall --dry-run: %d %q", code, out.String())
	}
	if code := run([]string{"run", "--state", t.TempDir()}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not enrolled") {
		t.Errorf("run without state: %d %q", code, errb.String())
	}
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: %d", code)
	}
	if code := run([]string{"enroll", "--server", "http://127.0.0.1:1", "--state", t.TempDir()}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "--token") {
		t.Errorf("enroll without token: %d %q", code, errb.String())
	}
}

func TestInventoryCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"inventory"}, &out, &errb); code != 0 {
		t.Fatalf("inventory: %d %s", code, errb.String())
	}
	var inv agentproto.Inventory
	if err := json.Unmarshal(out.Bytes(), &inv); err != nil {
		t.Fatalf("inventory output is not an Inventory: %v", err)
	}
	if inv.System.Hostname == "" {
		t.Error("no hostname")
	}
	if strings.Contains(errb.String(), "level=DEBUG") {
		t.Errorf("debug lines without --debug:\n%s", errb.String())
	}
	// --debug shows what the collectors did (and the absent sources).
	out.Reset()
	errb.Reset()
	if code := run([]string{"inventory", "--debug"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "level=DEBUG") {
		t.Errorf("inventory --debug: %d, no debug lines:\n%s", code, errb.String())
	}
}
