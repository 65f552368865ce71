package ctl_test

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/sso/ssotest"
)

// TestApprovalPolicyCommands: patchctl approvals policy get shows the
// policy; set adds, replaces and removes rules of the current policy and
// sets decline-older, or replaces it from a file; flag mistakes are usage
// errors before any call, the server's refusals API errors.
func TestApprovalPolicyCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	if out := h.ok("approvals", "policy", "get"); !strings.Contains(out, "No rule") || !strings.Contains(out, "Decline older:") {
		t.Errorf("get, no policy:\n%s", out)
	}
	var p apiv1.ApprovalPolicy
	h.okJSON(&p, "approvals", "policy", "set", "--rule", "Critical:OS:0", "--rule", "ANY:THIRD_PARTY:7", "--decline-older", "true")
	if len(p.Rules) != 2 || !p.DeclineOlder {
		t.Fatalf("set: %+v", p)
	}
	// Replace a rule's delay (severity and source case aside), remove another.
	if out := h.ok("approvals", "policy", "set", "--rule", "critical:os:2", "--remove", "any:third_party"); !strings.Contains(out, "1 rule(s), decline older true") {
		t.Errorf("set: %q", out)
	}
	rows, err := csv.NewReader(strings.NewReader(h.ok("approvals", "policy", "get", "-o", "csv"))).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][0] != "Critical" || rows[1][1] != "OS" || rows[1][2] != "2" {
		t.Fatalf("csv: %v %v", rows, err)
	}
	file := writeTemp(t, `{"declineOlder":false,"rules":[{"severity":"Low","source":"ANY","delayDays":30}]}`)
	h.okJSON(&p, "approvals", "policy", "set", "-f", file)
	if len(p.Rules) != 1 || p.Rules[0].Severity != "Low" || p.DeclineOlder {
		t.Fatalf("from a file: %+v", p)
	}
	h.okJSON(&p, "approvals", "policy", "set", "--clear")
	if len(p.Rules) != 0 || p.DeclineOlder {
		t.Fatalf("cleared: %+v", p)
	}
	h.fail(ctl.ExitUsage, "nothing to change", "approvals", "policy", "set")
	h.fail(ctl.ExitUsage, "SEVERITY:SOURCE", "approvals", "policy", "set", "--rule", "Critical")
	h.fail(ctl.ExitUsage, "no such rule", "approvals", "policy", "set", "--remove", "Low:OS")
	h.fail(ctl.ExitUsage, "want: approvals policy get", "approvals", "policy")
	h.fail(ctl.ExitAPI, "validation_failed", "approvals", "policy", "set", "--rule", "urgent:OS:1")
}

// TestVulnDecisionCommands: patchctl vulns accept records a decision
// (with --days or --expires), vulns exceptions list shows it, vulns revoke
// removes it (again: not found); vulns policy get and set read and change
// the remediation periods.
func TestVulnDecisionCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var x apiv1.VulnException
	h.okJSON(&x, "vulns", "accept", "cve-2023-4863", "--reason", "kiosk image", "--days", "30")
	if x.CVEID != "CVE-2023-4863" || x.Kind != "accepted" || x.ExpiresAt == nil || !x.Active {
		t.Fatalf("accept: %+v", x)
	}
	next := time.Now().UTC().AddDate(1, 0, 0).Format(time.DateOnly) // a date next year
	if out := h.ok("vulns", "accept", "CVE-2024-0001", "--kind", "compensating_control", "--reason", "WAF", "--expires", next); !strings.Contains(out, "compensating control recorded, until "+next+"T00:00:00Z") {
		t.Errorf("accept: %q", out)
	}
	out := h.ok("vulns", "exceptions", "list")
	for _, want := range []string{"CVE-2023-4863", "CVE-2024-0001", "compensating_control", "KIND", "kiosk image"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	var list []apiv1.VulnException
	h.okJSON(&list, "vulns", "exceptions", "list", "--kind", "accepted")
	if len(list) != 1 || list[0].CVEID != "CVE-2023-4863" {
		t.Fatalf("list --kind: %+v", list)
	}
	h.fail(ctl.ExitUsage, "needs --reason", "vulns", "accept", "CVE-2023-4863")
	h.fail(ctl.ExitUsage, "not both", "vulns", "accept", "CVE-2023-4863", "--reason", "r", "--days", "1", "--expires", next)
	h.fail(ctl.ExitAPI, "validation_failed", "vulns", "accept", "CVE-1", "--reason", "r")
	h.ok("vulns", "revoke", "CVE-2023-4863")
	h.fail(ctl.ExitAPI, "not_found", "vulns", "revoke", "CVE-2023-4863")

	if out := h.ok("vulns", "policy", "get"); !strings.Contains(out, "15 days") || !strings.Contains(out, "180 days") {
		t.Errorf("policy get:\n%s", out)
	}
	var p apiv1.RemediationPolicy
	h.okJSON(&p, "vulns", "policy", "set", "--critical-days", "7")
	if p != (apiv1.RemediationPolicy{CriticalDays: 7, HighDays: 30, MediumDays: 90, LowDays: 180}) {
		t.Fatalf("policy set: %+v", p)
	}
	h.fail(ctl.ExitUsage, "nothing to change", "vulns", "policy", "set")
	h.fail(ctl.ExitAPI, "validation_failed", "vulns", "policy", "set", "--low-days", "5000")

	// Deciding takes every permission.
	h.login(perm.Set(perm.APIAccess | perm.VulnerabilitiesView))
	h.ok("vulns", "exceptions", "list")
	h.fail(ctl.ExitAPI, "insufficient_scope", "vulns", "accept", "CVE-2023-4863", "--reason", "r")
}

// TestSSOCommands: patchctl sso set, get and delete drive the single
// sign-on provider through the API.
func TestSSOCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)
	issuer := ssotest.Issuer(t) // saving an enabled provider reads its discovery document
	f := writeTemp(t, `{"providerName":"Okta","issuer":"`+issuer+`","clientId":"patchd","clientSecret":"okta-secret","allowedDomains":["acme.example"],
		"roleClaim":"groups","roleMap":[{"value":"patchd-admins","role":"Administrator"}],"defaultRole":"Read-only","justInTime":true,"enabled":true,
		"providerVerifiesEmail":true}`)
	if out := h.ok("sso", "set", "-f", f); !strings.Contains(out, "Single sign-on with Okta saved (enabled)") {
		t.Errorf("sso set: %q", out)
	}
	out := h.ok("sso", "get")
	for _, want := range []string{issuer, "stored", "provider verifies e-mail: true", "patchd-admins = Administrator", "Read-only"} {
		if !strings.Contains(out, want) {
			t.Errorf("sso get lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "okta-secret") {
		t.Error("sso get shows the secret")
	}
	if r := h.run("", "sso", "set", "-f", writeTemp(t, `{"providerName":"X","issuer":"http://insecure.example","clientId":"c"}`)); r.code == 0 || !strings.Contains(r.stderr, "issuer") {
		t.Errorf("a bad provider: %d %s", r.code, r.stderr)
	}
	if r := h.run("", "sso", "set"); r.code != 2 || !strings.Contains(r.stderr, "needs -f FILE") {
		t.Errorf("sso set without a file: %d %s", r.code, r.stderr)
	}
	// On a terminal, delete asks; a "no" leaves the provider.
	h.typing = true
	if r := h.run("n\n", "sso", "delete"); r.code != 0 || !strings.Contains(r.stderr, "Remove single sign-on?") || !strings.Contains(r.stderr, "Nothing done") {
		t.Errorf("sso delete answered no: %d %s", r.code, r.stderr)
	}
	h.ok("sso", "get")
	if r := h.run("y\n", "sso", "delete"); r.code != 0 || !strings.Contains(r.stdout, "Single sign-on removed") {
		t.Errorf("sso delete answered yes: %d %s %s", r.code, r.stdout, r.stderr)
	}
	h.typing = false
	h.ok("sso", "set", "-f", f)
	h.ok("sso", "delete", "--yes")
	if r := h.run("", "sso", "get"); r.code == 0 {
		t.Errorf("sso get after delete: %d %s", r.code, r.stdout)
	}
}
