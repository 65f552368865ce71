// Package vulns holds the vulnerability logic that needs neither SQL nor
// HTTP: remediation deadlines and their status. The feeds are read by
// package feeds, versions compared by package version, and installed
// software matched by package match.
package vulns

import (
	"strings"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// Remediation statuses, as the API reports them.
const (
	StatusOverdue  = "Overdue"
	StatusDueSoon  = "Due soon"
	StatusDueLater = "Due later"
)

// Statuses are the remediation statuses, most urgent first.
var Statuses = []string{StatusOverdue, StatusDueSoon, StatusDueLater}

// DueSoonWindow is how close a deadline must be to count as "Due soon".
const DueSoonWindow = 7 * 24 * time.Hour

// Policy is how long an organization allows to fix a vulnerability, by
// severity, counted from its first detection on the fleet.
type Policy struct {
	Critical time.Duration
	High     time.Duration
	Medium   time.Duration
	Low      time.Duration
}

// DefaultPolicy answers 15, 30, 90 and 180 days.
func DefaultPolicy() Policy {
	const day = 24 * time.Hour
	return Policy{Critical: 15 * day, High: 30 * day, Medium: 90 * day, Low: 180 * day}
}

// period answers the policy's period for a severity, falling back to the
// default for a zero field; ok is false for an unknown severity.
func (p Policy) period(severity string) (time.Duration, bool) {
	def := DefaultPolicy()
	pick := func(v, d time.Duration) (time.Duration, bool) {
		if v > 0 {
			return v, true
		}
		return d, true
	}
	switch strings.ToUpper(strings.TrimSpace(severity)) {
	case "CRITICAL":
		return pick(p.Critical, def.Critical)
	case "HIGH":
		return pick(p.High, def.High)
	case "MEDIUM", "MODERATE":
		return pick(p.Medium, def.Medium)
	case "LOW":
		return pick(p.Low, def.Low)
	}
	return 0, false
}

// Deadline answers when a vulnerability must be fixed. A known exploited
// vulnerability (kev not nil, with a due date) is due by the end of CISA's
// due date (23:59:59 UTC), whatever its severity; otherwise the deadline is
// the first detection plus the policy's period for the severity. An unknown
// severity (or a zero first detection without KEV due date) has no
// deadline: the zero time. Use SeverityFromCVSS when only a score is known.
func Deadline(kev *feeds.KEV, firstDetected time.Time, severity string, policy Policy) time.Time {
	if kev != nil && !kev.DueDate.IsZero() {
		d := kev.DueDate.UTC()
		return time.Date(d.Year(), d.Month(), d.Day(), 23, 59, 59, 0, time.UTC)
	}
	if firstDetected.IsZero() {
		return time.Time{}
	}
	p, ok := policy.period(severity)
	if !ok {
		return time.Time{}
	}
	return firstDetected.UTC().Add(p)
}

// Status answers "Overdue" when the deadline has passed, "Due soon" when it
// falls within seven days, else "Due later"; "" for the zero deadline.
func Status(deadline, now time.Time) string {
	switch {
	case deadline.IsZero():
		return ""
	case now.After(deadline):
		return StatusOverdue
	case deadline.Sub(now) <= DueSoonWindow:
		return StatusDueSoon
	}
	return StatusDueLater
}

// SeverityFromCVSS answers the severity of a CVSS base score in the case
// the API uses: 9.0+ "Critical", 7.0+ "High", 4.0+ "Medium", above 0 "Low",
// and "" for nil or 0.
func SeverityFromCVSS(score *float64) string {
	if score == nil {
		return ""
	}
	return DisplaySeverity(feeds.SeverityFromScore(*score))
}

// DisplaySeverity turns NVD's "CRITICAL" into "Critical".
func DisplaySeverity(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
