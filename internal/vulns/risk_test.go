package vulns

import "testing"

func score(f float64) *float64 { return &f }

// The documented mapping of a CVSS base score to an update severity, KEV
// counting as Critical, and the risk formula 5 × CVSS + 30 × EPSS + 20 × KEV.
func TestUpdateSeverityAndRisk(t *testing.T) {
	for _, c := range []struct {
		f    CVEFacts
		want string
	}{
		{CVEFacts{CVSS: score(10)}, SevCritical}, {CVEFacts{CVSS: score(9.0)}, SevCritical}, {CVEFacts{CVSS: score(8.9)}, SevImportant},
		{CVEFacts{CVSS: score(7.0)}, SevImportant}, {CVEFacts{CVSS: score(6.9)}, SevModerate}, {CVEFacts{CVSS: score(4.0)}, SevModerate},
		{CVEFacts{CVSS: score(3.9)}, SevLow}, {CVEFacts{CVSS: score(0.1)}, SevLow}, {CVEFacts{CVSS: score(3.1), KEV: true}, SevCritical},
		{CVEFacts{NVDSeverity: "HIGH"}, SevImportant}, {CVEFacts{}, ""},
	} {
		if got := c.f.UpdateSeverity(); got != c.want {
			t.Errorf("%+v: severity %q, want %q", c.f, got, c.want)
		}
	}
	ff := CVEFacts{ID: "CVE-2024-9680", CVSS: score(9.8), KEV: true, EPSS: score(0.12889)}
	if ff.Risk() != 72.9 || ff.RiskReason() != "CVSS 9.8 × 5 = 49 + EPSS 0.12889 × 30 = 3.87 + in KEV 20 = 72.9" {
		t.Errorf("risk %v: %s", ff.Risk(), ff.RiskReason())
	}
	var f Fixes
	f.Add(CVEFacts{ID: "CVE-2024-12053", CVSS: score(8.8), EPSS: score(0.002)})
	f.Add(ff)
	if f.CVEs != 2 || !f.KEV || *f.MaxCVSS != 9.8 || f.Severity != SevCritical || f.Top != "CVE-2024-9680" || f.Risk != 72.9 {
		t.Errorf("fixes %+v", f)
	}
	if UpdateSeverity("Unspecified", false, f) != SevCritical || UpdateSeverity("Important", true, f) != "Important" ||
		UpdateSeverity("", false, Fixes{}) != SevUnspecified || UpdateSeverity("Critical", false, Fixes{CVEs: 1, Severity: SevLow}) != SevCritical {
		t.Error("UpdateSeverity: the vendor's severity, a KB's or none")
	}
	if r := SeverityReason(f); r != "fixes 2 CVEs · KEV · CVSS 9.8 · EPSS 0.12889" {
		t.Errorf("reason %q", r)
	}
}
