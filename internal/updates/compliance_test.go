package updates

import (
	"strings"
	"testing"
	"time"
)

func TestCompliancePolicy(t *testing.T) {
	p := DefaultCompliancePolicy()
	if p.Days("Critical") != 15 || p.Days("Important") != 30 || p.Days("Moderate") != 60 || p.Days("Low") != 90 || p.Days("Unspecified") != 90 || p.Days("odd") != 90 {
		t.Fatalf("defaults %+v", p)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if p.Overdue("Critical", now.AddDate(0, 0, -15), now) {
		t.Error("a critical update missing exactly 15 days is not overdue yet")
	}
	if !p.Overdue("Critical", now.AddDate(0, 0, -15).Add(-time.Second), now) {
		t.Error("a critical update missing over 15 days is overdue")
	}
	if p.Overdue("Low", now.AddDate(0, 0, -60), now) {
		t.Error("a low update missing 60 days is within its 90")
	}
	c := p.Cutoffs(now)
	if !c[0].Equal(now.AddDate(0, 0, -15)) || !c[4].Equal(now.AddDate(0, 0, -90)) {
		t.Errorf("cutoffs %v", c)
	}
	if CompliancePolicyOf(p.Periods()) != p {
		t.Error("Periods and CompliancePolicyOf are not each other's inverse")
	}
	for _, bad := range []int{0, -1, MaxComplianceDays + 1} {
		if CheckComplianceDays(bad) == nil {
			t.Errorf("%d days accepted", bad)
		}
	}
	if CheckComplianceDays(1) != nil || CheckComplianceDays(MaxComplianceDays) != nil {
		t.Error("bounds refused")
	}
	if d := p.Describe(); !strings.Contains(d, "Critical 15 days") || !strings.Contains(d, "declined") {
		t.Error(d)
	}
}

// An update that fixes a KEV CVE is overdue after the shorter of the KEV
// deadline and its severity's period.
func TestCompliancePolicyKEV(t *testing.T) {
	p := DefaultCompliancePolicy()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	since := now.AddDate(0, 0, -14).Add(-time.Second)
	if !p.OverdueKEV("Low", true, since, now) || p.OverdueKEV("Low", false, since, now) || p.OverdueKEV("Low", true, now.AddDate(0, 0, -14), now) {
		t.Error("KEV deadline of 14 days")
	}
	if !p.KEVCutoff(now).Equal(now.AddDate(0, 0, -14)) || CompliancePolicyOf(p.Periods()).KEV != 14 {
		t.Errorf("KEV cutoff %v, periods %v", p.KEVCutoff(now), p.Periods())
	}
}
