package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

// TestPeopleCommands: patchd admin user list, role, disable|enable,
// reset-password (one-time by default), reset-mfa and org second-factor,
// each in the organization's Audit Trail; audit list prints the client
// address of a console write.
func TestPeopleCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db, ok, fail := c.db, c.ok, c.fail
	ok("", "admin", "org", "create", "--name", "Acme")
	ok("correct horse battery\n", "admin", "user", "create", "--org", "Acme", "--email", "alice@example.com", "--role", "Administrator", "--password-stdin")
	ok("correct horse battery\n", "admin", "user", "create", "--org", "Acme", "--email", "bob@example.com", "--role", "Read-only", "--password-stdin")

	if u := ok("", "admin", "user", "role", "--email", "bob@example.com", "--role", "Administrator"); u["role"] != "Administrator" {
		t.Errorf("role: %v", u)
	}
	fail("not found", "admin", "user", "role", "--email", "bob@example.com", "--role", "Nope")
	fail("--role is required", "admin", "user", "role", "--email", "bob@example.com")
	if u := ok("", "admin", "user", "disable", "--email", "bob@example.com"); u["disabled"] != true {
		t.Errorf("disable: %v", u)
	}
	if u := ok("", "admin", "user", "enable", "--email", "bob@example.com"); u["disabled"] != false {
		t.Errorf("enable: %v", u)
	}
	fail("at least 12", "admin", "user", "reset-password", "--email", "bob@example.com", "--password-stdin")
	if u := ok("a one-time password\n", "admin", "user", "reset-password", "--email", "bob@example.com", "--password-stdin"); u["mustChangePassword"] != true {
		t.Errorf("reset-password: %v", u)
	}
	if u := ok("bob's new password\n", "admin", "user", "reset-password", "--email", "bob@example.com", "--password-stdin", "--must-change=false"); u["mustChangePassword"] != false {
		t.Errorf("reset-password --must-change=false: %v", u)
	}
	if u := ok("", "admin", "user", "reset-mfa", "--email", "bob@example.com"); u["secondFactor"] != false {
		t.Errorf("reset-mfa: %v", u)
	}
	if o := ok("", "admin", "org", "second-factor", "--org", "Acme", "--require", "true"); o["requireSecondFactor"] != true {
		t.Errorf("second-factor: %v", o)
	}
	fail("--require must be true or false", "admin", "org", "second-factor", "--org", "Acme", "--require", "maybe")
	// A person of Acme becomes a member of Globex with a role there.
	ok("", "admin", "org", "create", "--name", "Globex")
	fail("--to-org and --role are required", "admin", "user", "member-add", "--email", "alice@example.com", "--to-org", "Globex")
	if u := ok("", "admin", "user", "member-add", "--email", "alice@example.com", "--to-org", "Globex", "--role", "Read-only"); u["role"] != "Read-only" {
		t.Errorf("member-add: %v", u)
	}
	fail("already", "admin", "user", "member-add", "--email", "alice@example.com", "--org", "Acme", "--to-org", "Globex", "--role", "Read-only")
	if l := ok("", "admin", "user", "list", "--org", "Globex"); l["total"].(float64) != 1 {
		t.Errorf("Globex's members: %v", l)
	}
	fail("--org", "admin", "user", "role", "--email", "alice@example.com", "--role", "Administrator")
	if l := ok("", "admin", "user", "list", "--org", "Acme"); l["total"].(float64) != 2 {
		t.Errorf("list: %v", l)
	}
	// Leaving Globex keeps the account; its only organization is refused.
	fail("--org", "admin", "user", "member-remove", "--email", "alice@example.com")
	ok("", "admin", "user", "member-remove", "--email", "alice@example.com", "--org", "Globex")
	if l := ok("", "admin", "user", "list", "--org", "Globex"); l["total"].(float64) != 0 {
		t.Errorf("Globex's members after member-remove: %v", l)
	}
	fail("no other organization", "admin", "user", "member-remove", "--email", "alice@example.com", "--org", "Acme")
	if l := ok("", "admin", "user", "list", "--org", "Acme"); l["total"].(float64) != 2 {
		t.Errorf("Acme's members after a refused member-remove: %v", l)
	}

	// A console write with its address.
	ctx := context.Background()
	s := c.open()
	o, err := s.FindOrg(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordAudit(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "user:alice@example.com", Action: "user.sign_in", TargetType: "user", Address: "192.0.2.9"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	code, out, errOut := patchd(t, db, "", "admin", "audit", "list", "--org", "Acme", "--limit", "50")
	if code != 0 {
		t.Fatal(errOut)
	}
	actions := map[string]int{}
	var signIn map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		actions[e["action"].(string)]++
		if e["action"] == "user.sign_in" {
			signIn = e
		}
	}
	for _, a := range []string{"user.role_change", "user.disable", "user.enable", "user.password_reset", "user.mfa_reset", "org.require_mfa"} {
		if actions[a] == 0 {
			t.Errorf("no %s in the Audit Trail: %v", a, actions)
		}
	}
	if actions["user.password_reset"] != 2 || signIn["address"] != "192.0.2.9" {
		t.Errorf("audit list: %v %v", actions, signIn)
	}
}
