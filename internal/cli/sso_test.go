package cli

import (
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/sso/ssotest"
)

func TestAdminSSO(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	c.neverPrints = "s3cret"
	db, ok, fail := c.db, c.ok, c.failIn
	ok("", "admin", "org", "create", "--name", "Acme")
	fail("", "no single sign-on", "admin", "sso", "show", "--org", "Acme")
	issuer := ssotest.Issuer(t) // saving an enabled provider reads its discovery document
	set := []string{"admin", "sso", "set", "--org", "Acme", "--provider-name", "Okta", "--issuer", issuer,
		"--client-id", "0oa1", "--allowed-domains", "acme.example, Corp.Example", "--scopes", "groups",
		"--role-map", "patchd-admins=Administrator", "--role-map", "staff=Read-only", "--just-in-time", "true"}
	fail("", "clientSecret", set...)
	fail("s3cret-value\n", "no role \"Nope\"", append(set, "--default-role", "Nope")...)
	fail("s3cret-value\n", "issuer", "admin", "sso", "set", "--org", "Acme", "--provider-name", "X", "--issuer", "http://idp.example",
		"--client-id", "c", "--allowed-domains", "acme.example")
	got := ok("s3cret-value\n", append(set, "--client-secret-stdin", "--base-url", "https://patchd.acme.example/")...)
	if got["hasClientSecret"] != true || got["redirectUri"] != "https://patchd.acme.example/console/sso/callback" || got["justInTime"] != true ||
		got["enabled"] != true || strings.Join(toStrings(got["allowedDomains"]), ",") != "acme.example,corp.example" {
		t.Fatalf("sso set: %v", got)
	}
	// set changes what it is given and keeps the rest (the secret too).
	got = ok("", "admin", "sso", "set", "--org", "Acme", "--enabled", "false")
	if got["enabled"] != false || got["hasClientSecret"] != true || got["providerName"] != "Okta" || len(got["roleMap"].([]any)) != 2 {
		t.Fatalf("sso set --enabled false: %v", got)
	}
	if got := ok("", "admin", "sso", "show", "--org", "Acme"); got["issuer"] != issuer || got["org"] != "Acme" {
		t.Fatalf("sso show: %v", got)
	}
	fail("", "true or false", "admin", "sso", "set", "--org", "Acme", "--enabled", "maybe")
	if got := ok("", "admin", "sso", "set", "--org", "Acme", "--provider-verifies-email", "true"); got["providerVerifiesEmail"] != true {
		t.Fatalf("sso set --provider-verifies-email true: %v", got)
	}
	// An enabled provider whose discovery document names another issuer.
	fail("", `names the issuer "`+issuer+`"`, "admin", "sso", "set", "--org", "Acme", "--issuer", issuer+"/", "--enabled", "true")
	if got := ok("", "admin", "sso", "delete", "--org", "Acme"); got["deleted"] != true {
		t.Fatalf("sso delete: %v", got)
	}
	fail("", "no single sign-on", "admin", "sso", "delete", "--org", "Acme")
	code, out, _ := patchd(t, db, "", "admin", "audit", "list", "--org", "Acme", "--action", "sso_config.set")
	if code != 0 || strings.Count(out, "\n") != 3 || strings.Contains(out, "s3cret") || !strings.Contains(out, `"clientSecretChanged":true`) {
		t.Fatalf("the Audit Trail of the changes: %d\n%s", code, out)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
