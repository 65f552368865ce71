package ctl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
)

// TestOrgProfiles: a person with credentials of two organizations logs in
// once per organization (login --org names the profile after it), and
// --org (or PATCHCTL_ORG) picks the organization's profile: each command
// reaches that organization only.
func TestOrgProfiles(t *testing.T) {
	e := apitest.New(t)
	globex := e.NewOrg("Globex")
	enrollIn := func(orgToken, uid, host string) {
		keep := e.EnrollToken
		e.EnrollToken = orgToken
		defer func() { e.EnrollToken = keep }()
		e.Enroll(uid, host, "linux")
	}
	enrollIn(e.EnrollToken, "m-acme", "acme-host")
	tok, err := admin.CreateEnrollToken(context.Background(), e.Store, "test", globex.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	enrollIn(tok.Token, "m-globex", "globex-host")

	h := newHarness(t, e, e.URL)
	acmeCred, globexCred := e.Credential(e.Org, perm.ReadOnly), e.Credential(globex, perm.ReadOnly)
	h.vars["PATCHCTL_CLIENT_SECRET"] = acmeCred.ClientSecret
	h.ok("login", "--org", "Acme", "--server", e.URL, "--client-id", acmeCred.ClientID)
	h.vars["PATCHCTL_CLIENT_SECRET"] = globexCred.ClientSecret
	h.ok("login", "--org", "Globex", "--server", e.URL, "--client-id", globexCred.ClientID)
	// A second profile naming Globex is refused.
	h.fail(ctl.ExitUsage, "of organization", "login", "--org", "globex", "--profile", "other", "--server", e.URL, "--client-id", globexCred.ClientID)
	delete(h.vars, "PATCHCTL_CLIENT_SECRET")

	for org, want := range map[string][2]string{"Acme": {"acme-host", "globex-host"}, "globex": {"globex-host", "acme-host"}} {
		out := h.ok("--org", org, "endpoints", "list")
		if !strings.Contains(out, want[0]) || strings.Contains(out, want[1]) {
			t.Errorf("--org %s endpoints list:\n%s", org, out)
		}
	}
	h.vars["PATCHCTL_ORG"] = "Acme"
	if out := h.ok("endpoints", "list"); !strings.Contains(out, "acme-host") {
		t.Errorf("PATCHCTL_ORG=Acme:\n%s", out)
	}
	delete(h.vars, "PATCHCTL_ORG")
	h.fail(ctl.ExitUsage, "no profile of organization", "--org", "Initech", "endpoints", "list")
	// --profile wins over --org.
	if out := h.ok("--org", "Acme", "--profile", "Globex", "endpoints", "list"); !strings.Contains(out, "globex-host") {
		t.Errorf("--profile Globex --org Acme:\n%s", out)
	}
	h.ok("logout", "--org", "Globex")
	h.fail(ctl.ExitUsage, "no profile of organization", "--org", "Globex", "endpoints", "list")
}

// TestOrgCreate: patchctl org create creates an organization for the
// person behind the credential when it may (the API's 403 otherwise), with
// --template copying a template it administers.
func TestOrgCreate(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	h := newHarness(t, e, e.URL)
	if _, err := admin.CreateUser(ctx, e.Store, "test", e.Org.ID, "msp@example.com", "Administrator", "correct horse battery staple"); err != nil {
		t.Fatal(err)
	}
	cred, err := admin.CreateCredentialBy(ctx, e.Store, admin.By{Actor: "user:msp@example.com"}, e.Org.ID, "msp-cli", "Administrator")
	if err != nil {
		t.Fatal(err)
	}
	if r := h.run(cred.ClientSecret+"\n", "login", "--server", e.URL, "--client-id", cred.ClientID, "--client-secret-stdin"); r.code != 0 {
		t.Fatalf("login: %s", r.stderr)
	}
	h.fail(ctl.ExitUsage, "--name is required", "org", "create")
	h.fail(ctl.ExitAPI, "create_organizations", "org", "create", "--name", "Client A")
	if _, err := admin.SetCreateOrgs(ctx, e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "msp@example.com", true); err != nil {
		t.Fatal(err)
	}
	h.fail(ctl.ExitAPI, "template", "org", "create", "--name", "Client A", "--template", "Nowhere")
	var o apiv1.Organization
	h.okJSON(&o, "org", "create", "--name", "Client A", "--timezone", "Europe/Berlin", "--template", e.Org.Name)
	if o.Name != "Client A" || o.Administrator != "msp@example.com" || o.Copied == nil || o.Copied.TemplateID != e.Org.ID {
		t.Fatalf("created %+v", o)
	}
	if out := h.ok("org", "create", "--name", "Client B"); !strings.Contains(out, "Organization Client B created") {
		t.Fatalf("text: %s", out)
	}
}
