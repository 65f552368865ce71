package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
)

func TestAdminScriptsAndRunStop(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	ok, fail := c.ok, c.fail
	org := ok("", "admin", "org", "create", "--name", "Acme")
	sc := ok("echo $DIR\nexit 3010\n", "admin", "script", "create", "--org", "Acme", "--name", "Clean", "--language", "Bash", "--code-file", "-",
		"--param", "DIR=/tmp", "--param", "KEY!=", "--reboot-exit-codes", "3010, 1641", "--timeout", "600")
	if sc["name"] != "Clean" || sc["language"] != "bash" || sc["code"] != "echo $DIR\nexit 3010\n" || sc["timeoutSeconds"].(float64) != 600 ||
		len(sc["parameters"].([]any)) != 2 || len(sc["rebootExitCodes"].([]any)) != 2 {
		t.Fatalf("create: %v", sc)
	}
	p := sc["parameters"].([]any)[1].(map[string]any)
	if p["name"] != "KEY" || p["required"] != true {
		t.Fatalf("required parameter: %v", p)
	}
	up := ok("", "admin", "script", "update", "--org", "Acme", "--id", "Clean", "--code", "echo v2", "--reboot-exit-codes", "")
	if up["id"] != sc["id"] || up["code"] != "echo v2" || up["language"] != "bash" || len(up["rebootExitCodes"].([]any)) != 0 || len(up["parameters"].([]any)) != 2 {
		t.Fatalf("update: %v", up)
	}
	list := ok("", "admin", "script", "list", "--org", "Acme")
	if list["total"].(float64) != 1 {
		t.Fatalf("list: %v", list)
	}
	fail("exists", "admin", "script", "create", "--org", "Acme", "--name", "Clean", "--language", "sh", "--code", "x")
	fail("--language", "admin", "script", "create", "--org", "Acme", "--name", "Other", "--language", "cobol", "--code", "x")
	fail("--code", "admin", "script", "create", "--org", "Acme", "--name", "Other", "--language", "sh")
	fail("not found", "admin", "script", "update", "--org", "Acme", "--id", "nope", "--code", "x")
	if d := ok("", "admin", "script", "delete", "--org", "Acme", "--id", sc["id"].(string)); d["deleted"] != true {
		t.Fatalf("delete: %v", d)
	}
	fail("not found", "admin", "script", "delete", "--org", "Acme", "--id", "Clean")

	// run stop: pending commands are cancelled, the run is STOPPED.
	ctx := context.Background()
	s := c.open()
	var run store.CreatedRun
	err := s.InTx(ctx, func(tx *store.Tx) error {
		var err error
		run, err = tx.CreateRun(ctx, store.NewRun{OrgID: org["id"].(string), Name: "r", ActionType: "REBOOT"},
			[]store.NewCommand{{EndpointID: "e1", EndpointName: "one"}, {EndpointID: "e2", EndpointName: "two"}}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := ok("", "admin", "run", "stop", "--org", "Acme", "--id", run.RunID)
	if stopped["status"] != "STOPPED" || stopped["total"].(float64) != 2 || stopped["finishedAt"] == nil {
		t.Fatalf("stop: %v", stopped)
	}
	fail("STOPPED", "admin", "run", "stop", "--org", "Acme", "--id", run.RunID)
	fail("not found", "admin", "run", "stop", "--org", "Acme", "--id", "nope")
	audit := ok("", "admin", "audit", "list", "--org", "Acme", "--action", "run.stop", "--limit", "1")
	if b, _ := json.Marshal(audit); !strings.Contains(string(b), `"cancelled":2`) {
		t.Fatalf("audit: %s", b)
	}
}
