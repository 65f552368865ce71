package updates

import (
	"fmt"
	"time"
)

// CompliancePolicy is how many days an update of each severity may stay
// missing on an endpoint before the endpoint is out of compliance (patchd
// addition, GET and PUT /api/v1/compliance-policy). An update's clock starts
// when it was first reported missing on that endpoint; an update the
// organization declined does not count. KEV is the deadline of an update
// that fixes a CVE in CISA's Known Exploited Vulnerabilities catalog (CISA
// Binding Operational Directive 22-01), whatever its severity: such an
// update is overdue after the shorter of KEV and its severity's period.
type CompliancePolicy struct {
	Critical, Important, Moderate, Low, Unspecified int
	KEV                                             int
}

// MaxComplianceDays is the longest period a severity may be given.
const MaxComplianceDays = 3650

// DefaultCompliancePolicy is the policy of an organization that set none:
// 15 days for Critical and 30 for Important, the remediation deadlines of
// CISA Binding Operational Directive 19-02 for critical and high
// vulnerabilities, then 60 and 90 days for Moderate and Low, and 90 for
// updates of no stated severity; 14 days for an update that fixes a KEV
// CVE (the two weeks of CISA BOD 22-01).
func DefaultCompliancePolicy() CompliancePolicy {
	return CompliancePolicy{Critical: 15, Important: 30, Moderate: 60, Low: 90, Unspecified: 90, KEV: DefaultKEVDays}
}

// DefaultKEVDays is the KEV deadline of a policy that set none.
const DefaultKEVDays = 14

// KEVCutoff is the time before which an update that fixes a KEV CVE must
// have been reported missing to be overdue at now.
func (p CompliancePolicy) KEVCutoff(now time.Time) time.Time {
	return now.Add(-time.Duration(p.KEV) * 24 * time.Hour)
}

// OverdueKEV answers whether an update of the severity that fixes a KEV CVE
// (kev) missing since since is overdue at now.
func (p CompliancePolicy) OverdueKEV(severity string, kev bool, since, now time.Time) bool {
	return p.Overdue(severity, since, now) || kev && since.Add(time.Duration(p.KEV)*24*time.Hour).Before(now)
}

// Days answers the period of a severity (Unspecified's for any other).
func (p CompliancePolicy) Days(severity string) int {
	switch severity {
	case "Critical":
		return p.Critical
	case "Important":
		return p.Important
	case "Moderate":
		return p.Moderate
	case "Low":
		return p.Low
	}
	return p.Unspecified
}

// Cutoffs answers, in the order of Severities, the instant before which an
// update of that severity first reported missing is overdue at now.
func (p CompliancePolicy) Cutoffs(now time.Time) [5]time.Time {
	var out [5]time.Time
	for i, sev := range Severities {
		out[i] = now.Add(-time.Duration(p.Days(sev)) * 24 * time.Hour)
	}
	return out
}

// Overdue tells whether an update of severity first reported missing at
// since is past its deadline at now.
func (p CompliancePolicy) Overdue(severity string, since, now time.Time) bool {
	return since.Add(time.Duration(p.Days(severity)) * 24 * time.Hour).Before(now)
}

// Field names of the periods, as the API spells them, in the order of
// Severities, then the KEV deadline's.
var ComplianceFields = [6]string{"criticalDays", "importantDays", "moderateDays", "lowDays", "unspecifiedDays", "kevDays"}

// ComplianceLabels name the periods of ComplianceFields for people.
var ComplianceLabels = [6]string{"Critical", "Important", "Moderate", "Low", "Unspecified", "Fixes a KEV CVE"}

// Periods answers the periods in the order of ComplianceFields.
func (p CompliancePolicy) Periods() [6]int {
	return [6]int{p.Critical, p.Important, p.Moderate, p.Low, p.Unspecified, p.KEV}
}

// CompliancePolicyOf is the policy of periods given in the order of
// ComplianceFields.
func CompliancePolicyOf(days [6]int) CompliancePolicy {
	return CompliancePolicy{Critical: days[0], Important: days[1], Moderate: days[2], Low: days[3], Unspecified: days[4], KEV: days[5]}
}

// CheckComplianceDays answers a problem with one period, or nil.
func CheckComplianceDays(days int) error {
	if days < 1 || days > MaxComplianceDays {
		return fmt.Errorf("must be between 1 and %d days", MaxComplianceDays)
	}
	return nil
}

// Describe says the policy in a sentence, as the console and reports show it.
func (p CompliancePolicy) Describe() string {
	return fmt.Sprintf("An endpoint is compliant when no update has been missing longer than its severity allows: "+
		"Critical %d days, Important %d, Moderate %d, Low %d, Unspecified %d, and %d days for an update that fixes a CVE in CISA's KEV catalog "+
		"(severity derived from the CVEs an update fixes; counted from when the endpoint first reported it missing; declined updates do not count).",
		p.Critical, p.Important, p.Moderate, p.Low, p.Unspecified, p.KEV)
}
