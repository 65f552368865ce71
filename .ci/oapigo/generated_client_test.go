// Package oapigo_test drives a patchd server started in the test with the
// Go client that oapi-codegen generates from the served OpenAPI document
// (.ci/run writes it into patchdapi/ of a temporary copy of this folder):
// the token, then the approval policy, the remediation periods and a
// decision about a CVE (patchd additions), their answers and a
// 422 decoded into the generated types.
package oapigo_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/patchd/patchd/ci/oapigo/patchdapi"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

func TestGeneratedClient(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	cred := e.Credential(e.Org, perm.All)

	anon, err := patchdapi.NewClientWithResponses(e.URL, patchdapi.WithHTTPClient(e.HTTPClient))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := anon.IssueTokenWithResponse(ctx, patchdapi.IssueTokenJSONRequestBody{GrantType: "client_credentials",
		ClientId: &cred.ClientID, ClientSecret: &cred.ClientSecret})
	if err != nil || tok.JSON200 == nil {
		t.Fatalf("token: %v %s", err, body(tok))
	}
	bearer := patchdapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+tok.JSON200.AccessToken)
		return nil
	})
	c, err := patchdapi.NewClientWithResponses(e.URL, patchdapi.WithHTTPClient(e.HTTPClient), bearer)
	if err != nil {
		t.Fatal(err)
	}

	// The approval policy: replaced, normalised, read back.
	set, err := c.SetApprovalPolicyWithResponse(ctx, patchdapi.ApprovalPolicyBody{DeclineOlder: true,
		Rules: []patchdapi.ApprovalPolicyRule{{Severity: "critical", Source: "os", DelayDays: 2}}})
	if err != nil || set.JSON200 == nil {
		t.Fatalf("set approval policy: %v %s", err, body(set))
	}
	if p := set.JSON200; !p.DeclineOlder || len(p.Rules) != 1 || p.Rules[0].Severity != "Critical" || p.Rules[0].Source != "OS" || p.Rules[0].DelayDays != 2 {
		t.Fatalf("set approval policy: %+v", p)
	}
	got, err := c.GetApprovalPolicyWithResponse(ctx)
	if err != nil || got.JSON200 == nil || len(got.JSON200.Rules) != 1 {
		t.Fatalf("get approval policy: %v %s", err, body(got))
	}
	bad, err := c.SetApprovalPolicyWithResponse(ctx, patchdapi.ApprovalPolicyBody{Rules: []patchdapi.ApprovalPolicyRule{{Severity: "urgent", Source: "OS"}}})
	if err != nil || bad.JSON422 == nil || bad.JSON422.Details == nil || len(*bad.JSON422.Details) != 1 || (*bad.JSON422.Details)[0].Field != "rules[0].severity" {
		t.Fatalf("bad approval policy: %v %s", err, body(bad))
	}

	// The remediation periods.
	rem, err := c.SetRemediationPolicyWithResponse(ctx, patchdapi.RemediationPolicy{CriticalDays: 7, HighDays: 30, MediumDays: 90, LowDays: 180})
	if err != nil || rem.JSON200 == nil || rem.JSON200.CriticalDays != 7 {
		t.Fatalf("set remediation policy: %v %s", err, body(rem))
	}

	// A decision about a CVE, then the list.
	days := 30
	x, err := c.AcceptVulnerabilityRiskWithResponse(ctx, "CVE-2023-4863", patchdapi.AcceptVulnerabilityRiskJSONRequestBody{
		Kind: patchdapi.VulnerabilityExceptionBodyKindAccepted, Reason: "kiosk image without network", ValidDays: &days})
	if err != nil || x.JSON200 == nil || !x.JSON200.Active || x.JSON200.ExpiresAt == nil {
		t.Fatalf("accept: %v %s", err, body(x))
	}
	list, err := c.ListVulnerabilityExceptionsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || list.JSON200.Total != 1 || list.JSON200.Items[0].CveId != "CVE-2023-4863" {
		t.Fatalf("list: %v %s", err, body(list))
	}
}

// body is an answer's text for a failure message.
func body(r interface{ Status() string }) string {
	if r == nil {
		return "(no answer)"
	}
	return r.Status()
}
