package vulns

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// The severity of an update from the CVEs it fixes, and the risk score of a
// CVE, an update and an endpoint (docs/vulnerabilities.md, "Severity and
// risk"). Both are computed from three public facts about a CVE: its CVSS
// base score (the NVD's, v4.0 or v3.x when it has one), whether CISA's Known
// Exploited Vulnerabilities catalog lists it, and FIRST's EPSS probability
// that it is exploited in the next 30 days.

// Update severities, in the vocabulary of Update.severity (spec).
const (
	SevCritical    = "Critical"
	SevImportant   = "Important"
	SevModerate    = "Moderate"
	SevLow         = "Low"
	SevUnspecified = "Unspecified"
)

// CVEFacts are what patchd knows of one CVE for its severity and risk.
type CVEFacts struct {
	ID          string
	CVSS        *float64 // base score, nil when the NVD has none
	NVDSeverity string   // the NVD's rating (CRITICAL, HIGH…), used without a score
	KEV         bool
	EPSS        *float64 // probability 0-1, nil when the EPSS feed has no score
}

// UpdateSeverity answers the update severity a CVE gives the updates that
// fix it: Critical when it is in KEV; else by its CVSS base score, 9.0-10
// Critical, 7.0-8.9 Important, 4.0-6.9 Moderate, 0.1-3.9 Low; else by the
// NVD's rating (HIGH is Important, MEDIUM Moderate); "" when nothing is
// known.
func (c CVEFacts) UpdateSeverity() string {
	if c.KEV {
		return SevCritical
	}
	rating := c.NVDSeverity
	if c.CVSS != nil && *c.CVSS > 0 {
		rating = feeds.SeverityFromScore(*c.CVSS)
	}
	switch strings.ToUpper(strings.TrimSpace(rating)) {
	case "CRITICAL":
		return SevCritical
	case "HIGH", "IMPORTANT":
		return SevImportant
	case "MEDIUM", "MODERATE":
		return SevModerate
	case "LOW":
		return SevLow
	}
	return ""
}

// Weights of the risk score: 5 points per CVSS point (0-50), 30 points for
// an EPSS probability of 1 (0-30), 20 points for a CVE in KEV. The score
// runs from 0 to 100.
const (
	RiskPerCVSS = 5
	RiskEPSS    = 30
	RiskKEV     = 20
)

// Risk is the risk score of the CVE, 0-100, rounded to one decimal:
// 5 × CVSS + 30 × EPSS + 20 when in KEV. A CVE without a CVSS score counts
// the middle of its NVD rating's range (CRITICAL 9.5, HIGH 8.0, MEDIUM 5.5,
// LOW 2.0).
func (c CVEFacts) Risk() float64 {
	r := RiskPerCVSS * c.cvss()
	if c.EPSS != nil {
		r += RiskEPSS * min(max(*c.EPSS, 0), 1)
	}
	if c.KEV {
		r += RiskKEV
	}
	return math.Round(r*10) / 10
}

func (c CVEFacts) cvss() float64 {
	if c.CVSS != nil {
		return *c.CVSS
	}
	switch strings.ToUpper(c.NVDSeverity) {
	case "CRITICAL":
		return 9.5
	case "HIGH":
		return 8.0
	case "MEDIUM":
		return 5.5
	case "LOW":
		return 2.0
	}
	return 0
}

// RiskReason says how the CVE's risk score is made: "CVSS 9.8 × 5 = 49 +
// EPSS 0.94 × 30 = 28.2 + KEV 20 = 97.2".
func (c CVEFacts) RiskReason() string {
	var parts []string
	switch {
	case c.CVSS != nil:
		parts = append(parts, fmt.Sprintf("CVSS %s × %d = %s", num(*c.CVSS), RiskPerCVSS, num(RiskPerCVSS**c.CVSS)))
	case c.cvss() > 0:
		parts = append(parts, fmt.Sprintf("%s (no score: %s) × %d = %s", DisplaySeverity(c.NVDSeverity), num(c.cvss()), RiskPerCVSS, num(RiskPerCVSS*c.cvss())))
	default:
		parts = append(parts, "no CVSS score")
	}
	if c.EPSS != nil {
		parts = append(parts, fmt.Sprintf("EPSS %s × %d = %s", prob(*c.EPSS), RiskEPSS, num(RiskEPSS**c.EPSS)))
	} else {
		parts = append(parts, "no EPSS score")
	}
	if c.KEV {
		parts = append(parts, fmt.Sprintf("in KEV %d", RiskKEV))
	}
	return strings.Join(parts, " + ") + " = " + num(c.Risk())
}

// num prints a number with at most two decimals and no trailing zeros.
func num(f float64) string {
	s := fmt.Sprintf("%.2f", math.Round(f*100)/100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// prob prints an EPSS probability as the feed gives it (five decimals at
// most).
func prob(p float64) string { return strconv.FormatFloat(math.Round(p*1e5)/1e5, 'f', -1, 64) }

// SeverityRank orders update severities: Critical 4 … Low 1, anything else 0.
func SeverityRank(s string) int {
	switch s {
	case SevCritical:
		return 4
	case SevImportant:
		return 3
	case SevModerate:
		return 2
	case SevLow:
		return 1
	}
	return 0
}

// Fixes sums up the CVEs one update fixes.
type Fixes struct {
	CVEs     int
	KEV      bool
	MaxCVSS  *float64
	MaxEPSS  *float64
	Severity string  // the highest UpdateSeverity, "" when none is known
	Risk     float64 // the highest CVE risk
	Top      string  // the CVE of the highest risk (the first id on a tie)
}

// Add counts one more CVE the update fixes.
func (f *Fixes) Add(c CVEFacts) {
	f.CVEs++
	f.KEV = f.KEV || c.KEV
	if c.CVSS != nil && (f.MaxCVSS == nil || *c.CVSS > *f.MaxCVSS) {
		v := *c.CVSS
		f.MaxCVSS = &v
	}
	if c.EPSS != nil && (f.MaxEPSS == nil || *c.EPSS > *f.MaxEPSS) {
		v := *c.EPSS
		f.MaxEPSS = &v
	}
	if s := c.UpdateSeverity(); SeverityRank(s) > SeverityRank(f.Severity) {
		f.Severity = s
	}
	if r := c.Risk(); f.Top == "" || r > f.Risk || r == f.Risk && c.ID < f.Top {
		f.Risk, f.Top = r, c.ID
	}
}

// UpdateSeverity is the effective severity of an update whose vendor says
// vendor: for an application or Linux package update (not a Windows KB)
// that fixes known CVEs, the higher of the vendor's and the CVEs'; else the
// vendor's.
func UpdateSeverity(vendor string, windowsKB bool, f Fixes) string {
	if windowsKB || f.Severity == "" || SeverityRank(vendor) >= SeverityRank(f.Severity) {
		if vendor == "" {
			return SevUnspecified
		}
		return vendor
	}
	return f.Severity
}

// SeverityReason says why an update has its severity: "fixes 3 CVEs · KEV ·
// CVSS 9.8", "" when it fixes none known.
func SeverityReason(f Fixes) string {
	if f.CVEs == 0 {
		return ""
	}
	s := fmt.Sprintf("fixes %d CVE", f.CVEs)
	if f.CVEs > 1 {
		s += "s"
	}
	if f.KEV {
		s += " · KEV"
	}
	if f.MaxCVSS != nil {
		s += " · CVSS " + num(*f.MaxCVSS)
	}
	if f.MaxEPSS != nil {
		s += " · EPSS " + prob(*f.MaxEPSS)
	}
	return s
}
