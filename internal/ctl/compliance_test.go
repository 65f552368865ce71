package ctl_test

import (
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
)

// TestComplianceCommands: patchctl compliance policy get and set read and
// change the compliance policy through the API; compliance groups lists
// every group with its compliant endpoints under it.
func TestComplianceCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	if out := h.ok("compliance", "policy", "get"); !strings.Contains(out, "15 days") || !strings.Contains(out, "Unspecified") || !strings.Contains(out, "compliant when") {
		t.Errorf("policy get:\n%s", out)
	}
	var p apiv1.CompliancePolicy
	h.okJSON(&p, "compliance", "policy", "set", "--critical-days", "7", "--unspecified-days", "120")
	if p.CriticalDays != 7 || p.ImportantDays != 30 || p.ModerateDays != 60 || p.LowDays != 90 || p.UnspecifiedDays != 120 {
		t.Fatalf("policy set: %+v", p)
	}
	h.fail(ctl.ExitUsage, "nothing to change", "compliance", "policy", "set")
	h.fail(ctl.ExitUsage, "takes no flags", "compliance", "policy", "get", "--low-days", "3")
	h.fail(ctl.ExitAPI, "validation_failed", "compliance", "policy", "set", "--low-days", "5000")
	out := h.ok("compliance", "groups")
	for _, want := range []string{"GROUP", "COMPLIANT", "All endpoints", "New endpoints"} {
		if !strings.Contains(out, want) {
			t.Errorf("groups lacks %q:\n%s", want, out)
		}
	}

	h.login(perm.Set(perm.APIAccess | perm.EndpointsView))
	h.ok("compliance", "policy", "get")
	h.fail(ctl.ExitAPI, "insufficient_scope", "compliance", "policy", "set", "--critical-days", "3")
}
