package cli

import (
	"strings"
	"testing"
)

// TestOrgCreateCommands: patchd admin user create-orgs grant|revoke|list
// (instance events), and patchd admin org create --template with
// --admin-email: the person becomes Administrator of the new organization,
// which gets copies of the template's groups; bad input changes nothing.
func TestOrgCreateCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	ok, fail := c.ok, c.fail
	ok("", "admin", "org", "create", "--name", "Template")
	ok("correct horse battery\n", "admin", "user", "create", "--org", "Template", "--email", "msp@example.com", "--role", "Administrator", "--password-stdin")

	g := ok("", "admin", "user", "create-orgs", "grant", "--email", "msp@example.com")
	if g["createOrgs"] != true || g["changed"] != true || g["org"] != "Template" {
		t.Fatalf("grant: %v", g)
	}
	if l := ok("", "admin", "user", "create-orgs", "list"); l["total"].(float64) != 1 || !strings.Contains(fmtJSON(l), "msp@example.com") {
		t.Fatalf("list: %v", l)
	}
	fail("grant, revoke or list", "admin", "user", "create-orgs")
	fail("no console user", "admin", "user", "create-orgs", "grant", "--email", "nobody@example.com")

	fail("--name is required", "admin", "org", "create", "--template", "Template")
	fail("template", "admin", "org", "create", "--name", "Client", "--template", "Nowhere")
	fail("name", "admin", "org", "create", "--name", "Template")
	fail("timezone", "admin", "org", "create", "--name", "Client", "--timezone", "Mars/Base")
	if l := ok("", "admin", "org", "list"); l["total"].(float64) != 1 {
		t.Fatalf("refused creations made organizations: %v", l)
	}
	o := ok("", "admin", "org", "create", "--name", "Client", "--timezone", "Europe/Berlin", "--template", "Template", "--admin-email", "msp@example.com")
	copied, _ := o["copied"].(map[string]any)
	if o["name"] != "Client" || o["administrator"] != "msp@example.com" || copied == nil || copied["template"] != "Template" {
		t.Fatalf("create: %v", o)
	}
	users := ok("", "admin", "user", "list", "--org", "Client")
	if !strings.Contains(fmtJSON(users), `"msp@example.com"`) || !strings.Contains(fmtJSON(users), `"Administrator"`) {
		t.Fatalf("the new organization's users: %v", users)
	}
	r := ok("", "admin", "user", "create-orgs", "revoke", "--email", "msp@example.com", "--org", "Client")
	if r["createOrgs"] != false || r["changed"] != true {
		t.Fatalf("revoke: %v", r)
	}
	code, out, errOut := patchd(t, c.db, "", "admin", "audit", "list", "--instance", "--limit", "10")
	if code != 0 || !strings.Contains(out, "org_creator.grant") || !strings.Contains(out, "org_creator.revoke") || !strings.Contains(out, `"org.create"`) {
		t.Fatalf("instance audit: %d %s %s", code, out, errOut)
	}
}
