package cli

import "testing"

func TestApprovalPolicyCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db, ok, fail := c.db, c.ok, c.fail
	ok("", "admin", "org", "create", "--name", "Acme")
	p := ok("", "admin", "approval-policy", "list", "--org", "Acme")
	if p["declineOlder"] != false || len(p["rules"].([]any)) != 0 {
		t.Fatalf("empty policy: %v", p)
	}
	p = ok("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "Critical", "--source", "OS", "--delay-days", "0")
	if rules := p["rules"].([]any); len(rules) != 1 || rules[0].(map[string]any)["severity"] != "Critical" || rules[0].(map[string]any)["source"] != "OS" {
		t.Fatalf("set: %v", p)
	}
	// Setting the same severity and source again replaces its delay.
	p = ok("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "critical", "--source", "os", "--delay-days", "3")
	if rules := p["rules"].([]any); len(rules) != 1 || rules[0].(map[string]any)["delayDays"].(float64) != 3 {
		t.Fatalf("replace: %v", p)
	}
	p = ok("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "ANY", "--source", "THIRD_PARTY", "--delay-days", "7", "--decline-older=true")
	if len(p["rules"].([]any)) != 2 || p["declineOlder"] != true {
		t.Fatalf("second rule: %v", p)
	}
	if p = ok("", "admin", "approval-policy", "set", "--org", "Acme", "--decline-older=false"); p["declineOlder"] != false || len(p["rules"].([]any)) != 2 {
		t.Fatalf("decline-older off: %v", p)
	}
	p = ok("", "admin", "approval-policy", "delete", "--org", "Acme", "--severity", "Critical", "--source", "OS")
	if len(p["rules"].([]any)) != 1 {
		t.Fatalf("delete: %v", p)
	}
	fail("", "admin", "approval-policy", "delete", "--org", "Acme", "--severity", "Critical", "--source", "OS")
	fail("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "Urgent", "--source", "OS")
	fail("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "Low", "--source", "apps")
	fail("", "admin", "approval-policy", "set", "--org", "Acme", "--severity", "Low", "--source", "OS", "--delay-days", "-1")
	fail("", "admin", "approval-policy", "set", "--org", "Acme", "--decline-older=maybe")
	fail("", "admin", "approval-policy", "set", "--org", "Acme")
	fail("", "admin", "approval-policy", "list", "--org", "Nobody")
	code, out, _ := patchd(t, db, "", "admin", "audit", "list", "--org", "Acme", "--action", "approval_policy.set")
	if code != 0 || out == "" {
		t.Fatalf("audit: %d %q", code, out)
	}
}
