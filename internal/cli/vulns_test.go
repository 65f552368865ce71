package cli

import "testing"

// TestAdminVulnAcceptRevoke runs patchd admin vuln accept, list and revoke
// (admin.AcceptVulnRisk and admin.RevokeVulnRisk, shared with the console).
func TestAdminVulnAcceptRevoke(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	ok, fail := c.ok, c.fail
	ok("", "admin", "org", "create", "--name", "Acme")
	out := ok("", "admin", "vuln", "accept", "--org", "Acme", "--cve", "cve-2023-4863", "--reason", "kiosk without network",
		"--kind", "compensating_control", "--expires", "720h")
	x := out["exception"].(map[string]any)
	if x["cveId"] != "CVE-2023-4863" || x["createdBy"] != "admin:cli" || x["expiresAt"] == nil || x["kind"] != "compensating_control" {
		t.Errorf("accept answered %v", out)
	}
	if l := ok("", "admin", "vuln", "list", "--org", "Acme"); l["total"].(float64) != 1 {
		t.Errorf("list answered %v", l)
	}
	fail("--reason", "admin", "vuln", "accept", "--org", "Acme", "--cve", "CVE-2023-4863")
	fail("--cve", "admin", "vuln", "accept", "--org", "Acme", "--cve", "4863", "--reason", "r")
	ok("", "admin", "vuln", "revoke", "--org", "Acme", "--cve", "CVE-2023-4863")
	fail("no accepted risk", "admin", "vuln", "revoke", "--org", "Acme", "--cve", "CVE-2023-4863")
}
