package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

func TestEnrollmentTokens(t *testing.T) {
	e, ctx := apitest.NewParallel(t, apitest.WithOwnCA())
	cred, admin := e.CredentialClient(e.Org, perm.All)
	before, err := admin.ListEnrollTokens(ctx)
	if err != nil || before.Total != 1 {
		t.Fatalf("list: %+v %v", before, err)
	}

	// A token valid a week, pinned to the server's own CA.
	created, err := admin.CreateEnrollToken(ctx, apiv1.EnrollTokenBody{ExpiresInHours: 168})
	if err != nil || created.ID == "" || len(created.CASHA256) != 64 || !strings.HasSuffix(created.Token, "."+created.CASHA256) ||
		created.ExpiresAt == nil || time.Until(*created.ExpiresAt) < 167*time.Hour || time.Until(*created.ExpiresAt) > 169*time.Hour {
		t.Fatalf("create: %+v %v", created, err)
	}
	if created.Secret()+"."+created.CASHA256 != created.Token || strings.Contains(created.Secret(), ".") {
		t.Fatalf("secret %q of %q", created.Secret(), created.Token)
	}
	if pin, err := e.Store.EnrollPin(ctx); err != nil || pin != created.CASHA256 {
		t.Fatalf("pin %q, server's %q (%v)", created.CASHA256, pin, err)
	}
	auditedAs(t, e, e.Org, "enroll_token.create", cred.Name, created.ID)
	forever, err := admin.CreateEnrollToken(ctx, apiv1.EnrollTokenBody{})
	if err != nil || forever.ExpiresAt != nil {
		t.Fatalf("create without expiry: %+v %v", forever, err)
	}

	// Agents enroll with it; the list counts the uses and never shows a token.
	e.EnrollToken = created.Token
	e.Enroll("m1", "host-1", "linux")
	e.Enroll("m2", "host-2", "linux")
	list, err := admin.ListEnrollTokens(ctx)
	if err != nil || list.Total != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	for _, tok := range list.Items {
		if tok.ID == created.ID && (tok.Uses != 2 || tok.Revoked || tok.ExpiresAt == nil) {
			t.Fatalf("listed %+v", tok)
		}
	}
	if raw := rawGet(t, e, "/api/v1/enrollment-tokens"); strings.Contains(raw, strings.Split(created.Token, ".")[0]) {
		t.Fatal("the list shows a token")
	}

	// Bad input changes nothing.
	if _, err := admin.CreateEnrollToken(ctx, apiv1.EnrollTokenBody{ExpiresInHours: -1}); problemFields(err) != "validation_failed:expiresInHours" {
		t.Errorf("negative expiry: %v", err)
	}
	tok := tokenOf(t, admin)
	expectCalls(t, e, tok,
		rawCase{http.MethodPost, "/api/v1/enrollment-tokens", `{"expiresInHours":`, http.StatusBadRequest, "invalid_json"},
		rawCase{http.MethodPost, "/api/v1/enrollment-tokens", `{"expiresInHours":"a week"}`, http.StatusUnprocessableEntity, ""})
	if l, _ := admin.ListEnrollTokens(ctx); l.Total != 3 {
		t.Fatalf("refused creations made tokens: %d", l.Total)
	}

	// Roles without endpoints.manage get 403; another organization, 404.
	for _, perms := range []perm.Set{perm.ReadOnly, perm.Set(perm.APIAccess | perm.AutomationsManage | perm.EndpointsView)} {
		c := e.Client(e.Org, perms)
		if _, err := c.ListEnrollTokens(ctx); !client.IsStatus(err, http.StatusForbidden) {
			t.Errorf("%v list: %v", perms.Names(), err)
		}
		if _, err := c.CreateEnrollToken(ctx, apiv1.EnrollTokenBody{}); !client.IsStatus(err, http.StatusForbidden) {
			t.Errorf("%v create: %v", perms.Names(), err)
		}
		if err := c.RevokeEnrollToken(ctx, created.ID); !client.IsStatus(err, http.StatusForbidden) {
			t.Errorf("%v revoke: %v", perms.Names(), err)
		}
	}
	other := e.Client(e.NewOrg("Other"), perm.All)
	wantStatus(t, other.RevokeEnrollToken(ctx, created.ID), http.StatusNotFound, "other org revoke")
	if l, err := other.ListEnrollTokens(ctx); err != nil || l.Total != 0 {
		t.Errorf("other org list: %+v %v", l, err)
	}

	// Revoked: it enrolls nothing more; enrolled agents stay.
	if err := admin.RevokeEnrollToken(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	auditedAs(t, e, e.Org, "enroll_token.revoke", cred.Name, created.ID)
	ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: created.Token, MachineUID: "m3",
		Hostname: "host-3", Platform: "linux", OS: "Test OS", OSVersion: "1", Arch: "amd64", AgentVersion: "1.0.0"}, false)
	if ans.Status != http.StatusUnauthorized {
		t.Fatalf("enroll with a revoked token: %d %s", ans.Status, ans.Body)
	}
	wantStatus(t, admin.RevokeEnrollToken(ctx, "nope"), http.StatusNotFound, "revoke unknown")
	eps, err := admin.ListEndpoints(ctx, client.EndpointQuery{})
	if err != nil || eps.Total != 2 {
		t.Fatalf("endpoints after revoke: %+v %v", eps, err)
	}
}
