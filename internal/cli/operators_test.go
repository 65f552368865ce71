package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInstanceOperatorCommands: patchd admin user create
// --instance-operator, user operator grant|revoke|list (the last operator
// is never revoked), patchd vulndb import recorded as an instance event,
// and patchd admin audit list --instance.
func TestInstanceOperatorCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db, ok, fail := c.db, c.ok, c.fail
	ok("", "admin", "org", "create", "--name", "Acme")
	ok("", "admin", "org", "create", "--name", "Globex")
	op := ok("correct horse battery\n", "admin", "user", "create", "--org", "Acme", "--email", "Op@Example.com", "--role", "Read-only",
		"--password-stdin", "--instance-operator")
	if op["instanceOperator"] != true || op["email"] != "op@example.com" {
		t.Fatalf("user create --instance-operator: %v", op)
	}
	bob := ok("correct horse battery\n", "admin", "user", "create", "--org", "Globex", "--email", "bob@globex.example", "--role", "Administrator", "--password-stdin")
	if bob["instanceOperator"] != false {
		t.Fatalf("a plain user create: %v", bob)
	}

	// The only operator is never revoked.
	fail("last enabled instance operator", "admin", "user", "operator", "revoke", "--email", "op@example.com")
	if l := ok("", "admin", "user", "operator", "list"); l["total"].(float64) != 1 {
		t.Fatalf("operators after the refused revoke: %v", l)
	}
	g := ok("", "admin", "user", "operator", "grant", "--email", "bob@globex.example")
	if g["instanceOperator"] != true || g["changed"] != true || g["org"] != "Globex" {
		t.Fatalf("grant: %v", g)
	}
	if g := ok("", "admin", "user", "operator", "grant", "--email", "bob@globex.example"); g["changed"] != false {
		t.Fatalf("a second grant: %v", g)
	}
	if r := ok("", "admin", "user", "operator", "revoke", "--email", "op@example.com", "--org", "Acme"); r["instanceOperator"] != false || r["changed"] != true {
		t.Fatalf("revoke with another operator left: %v", r)
	}
	fail("last enabled instance operator", "admin", "user", "operator", "revoke", "--email", "bob@globex.example")
	fail("no console user", "admin", "user", "operator", "grant", "--email", "nobody@example.com")
	fail("no console user", "admin", "user", "operator", "grant", "--email", "op@example.com", "--org", "Globex")
	fail("--email is required", "admin", "user", "operator", "grant")
	fail("grant, revoke, list, sso-allow or sso-deny", "admin", "user", "operator")

	// Single sign-on for an operator: only by this instance-level action.
	fail("is not an instance operator", "admin", "user", "operator", "sso-allow", "--email", "op@example.com", "--org", "Acme")
	if a := ok("", "admin", "user", "operator", "sso-allow", "--email", "bob@globex.example"); a["operatorSso"] != true || a["changed"] != true {
		t.Fatalf("sso-allow: %v", a)
	}
	if l := ok("", "admin", "user", "operator", "list"); !strings.Contains(fmtJSON(l), `"operatorSso":true`) {
		t.Fatalf("the operator list after sso-allow: %v", l)
	}
	if d := ok("", "admin", "user", "operator", "sso-deny", "--email", "bob@globex.example"); d["operatorSso"] != false || d["changed"] != true {
		t.Fatalf("sso-deny: %v", d)
	}

	// A malformed --msrc-since is refused before anything is synced.
	if code, _, errOut := patchd(t, db, "", "vulndb", "sync", "--msrc-since", "2025", "--nvd-url", "", "--kev-url", "", "--osv-url", ""); code == 0 ||
		!strings.Contains(errOut, "--msrc-since") {
		t.Errorf("vulndb sync --msrc-since 2025: %d %s", code, errOut)
	}
	// A feed import on the command line is an instance event.
	code, out, errOut := patchd(t, db, "", "vulndb", "import", "../vulns/testdata/kev-subset.json")
	if code != 0 || decode(t, out)["ok"] != true {
		t.Fatalf("vulndb import: %d %s %s", code, out, errOut)
	}

	code, out, errOut = patchd(t, db, "", "admin", "audit", "list", "--instance", "--limit", "50")
	if code != 0 {
		t.Fatalf("audit list --instance: %d %s", code, errOut)
	}
	var actions []string
	var imp map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not one JSON object a line: %q", line)
		}
		actions = append(actions, e["action"].(string))
		if !strings.HasPrefix(e["actor"].(string), "cli") {
			t.Errorf("a CLI change recorded as %v", e["actor"])
		}
		if e["action"] == "vulndb.import" {
			imp = e
		}
	}
	want := "vulndb.import instance_operator.sso_deny instance_operator.sso_allow instance_operator.revoke instance_operator.grant instance_operator.grant org.create org.create"
	if strings.Join(actions, " ") != want {
		t.Fatalf("instance events:\n got %s\nwant %s", strings.Join(actions, " "), want)
	}
	summary, _ := imp["summary"].(map[string]any)
	if summary["kev"].(float64) < 1 || summary["feedVersion"].(float64) < 1 || !strings.Contains(fmtJSON(summary["files"]), "kev-subset.json") {
		t.Errorf("the import's event: %v", imp)
	}
	code, out, _ = patchd(t, db, "", "admin", "audit", "list", "--instance", "--action", "vulndb.import")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("audit list --instance --action: %d %q", code, out)
	}
	fail("exclude each other", "admin", "audit", "list", "--instance", "--org", "Acme")
}
