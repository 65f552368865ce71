// Package feeds reads public vulnerability feeds into normalised Go values:
// the NVD CVE API 2.0 JSON (streamed, so a whole year file is never held in
// memory), the CISA Known Exploited Vulnerabilities catalog, and OSV records
// of Linux distributions. It also downloads them (Download, NVDClient) and
// opens plain, gzip and zip files (Open). It has no SQL and no HTTP server.
package feeds

import (
	"strings"
	"time"
)

// Format is the kind of a feed document.
type Format string

// The formats Detect recognises.
const (
	FormatUnknown Format = ""
	FormatNVD     Format = "nvd"  // NVD CVE API 2.0 / JSON 2.0 feed
	FormatKEV     Format = "kev"  // CISA KEV catalog
	FormatOSV     Format = "osv"  // one OSV record or an array of them
	FormatMSRC    Format = "msrc" // a monthly MSRC CVRF document (JSON or XML)
	// FormatOfficeBuilds is the Microsoft 365 Apps release history
	// (OfficeBuild).
	FormatOfficeBuilds Format = "office-builds"
	// FormatEPSS is FIRST's daily EPSS scores, CSV (EPSS).
	FormatEPSS Format = "epss"
)

// CVE is one vulnerability from the NVD.
type CVE struct {
	ID          string
	Published   time.Time
	Modified    time.Time
	Description string   // the English description
	CVSS        *float64 // base score of the preferred metric, nil when NVD has none
	CVSSVersion string   // "4.0", "3.1", "3.0" or "2.0"
	Severity    string   // CRITICAL, HIGH, MEDIUM, LOW or "" when unknown
	Vector      string
	CPEMatches  []CPEMatch // only the vulnerable matches; platform conditions are dropped
}

// CPEMatch is one vulnerable product range of a CVE. Vendor and Product are
// unescaped ("notepad++", not "notepad\+\+"). Version is "*" for a range
// given by the four bounds, else one exact version (Update, when not "*" or
// "-", completes it: OpenSSL 1.0.2 update "k").
type CPEMatch struct {
	Part      string // "a" application, "o" operating system, "h" hardware
	Vendor    string
	Product   string
	Version   string
	Update    string
	StartIncl string
	StartExcl string
	EndIncl   string
	EndExcl   string
	TargetSW  string // "*" or a platform such as "windows", "android", "macos"
}

// KEV is one entry of the CISA Known Exploited Vulnerabilities catalog.
// Dates are midnight UTC of the catalog's calendar dates.
type KEV struct {
	CVEID         string
	DateAdded     time.Time
	DueDate       time.Time
	Ransomware    bool // knownRansomwareCampaignUse is "Known"
	VendorProject string
	Product       string
	Name          string // vulnerabilityName
	Description   string // shortDescription
}

// OSVAdvisory is one affected package of an OSV record: a record that
// names several packages or releases gives several advisories with the same
// ID.
type OSVAdvisory struct {
	ID        string
	CVEs      []string // CVE ids among the id, aliases, related and upstream
	Summary   string
	Ecosystem string // normalised: "debian:12", "ubuntu:22.04", "almalinux:9", "rocky:9"
	Package   string // the (source) package name as the distribution names it
	Ranges    []AffectedRange
	Versions  []string // explicitly listed affected versions
	Severity  string   // the first severity score given (usually a CVSS vector), if any
	Published time.Time
	Modified  time.Time
	Withdrawn time.Time // zero unless the record was withdrawn
}

// AffectedRange is one interval of affected versions: Introduced <= v and
// v < Fixed, or v <= LastAffected; with neither, every version from
// Introduced on is affected. Introduced "0" (or "") means since the start.
type AffectedRange struct {
	Introduced   string
	Fixed        string
	LastAffected string
}

// NormalizeEcosystem turns an OSV ecosystem or an endpoint's distribution
// into the form the matcher keys on: lower-case distribution id, a colon and
// the release that advisories are published for ("Debian:12" → "debian:12",
// "Ubuntu:22.04:LTS" → "ubuntu:22.04", "Ubuntu:Pro:20.04:LTS" →
// "ubuntu:20.04", "Rocky Linux:9" → "rocky:9", "almalinux:9.3" →
// "almalinux:9", "Debian 12.5" → "debian:12"). Ecosystems of language package
// managers are answered in lower case.
func NormalizeEcosystem(eco string) string {
	eco = strings.TrimSpace(strings.ToLower(eco))
	if eco == "" {
		return ""
	}
	if i := strings.IndexByte(eco, '('); i > 0 { // "debian gnu/linux 12 (bookworm)"
		eco = strings.TrimSpace(eco[:i])
	}
	parts := strings.FieldsFunc(eco, func(r rune) bool { return r == ':' })
	if len(parts) == 0 {
		return ""
	}
	if !strings.Contains(eco, ":") {
		// "debian 12.5", "ubuntu 22.04.3 lts", "rocky linux 9.3": the
		// release is the first word that starts with a digit.
		f := strings.Fields(eco)
		for i := 1; i < len(f); i++ {
			if startsWithDigit(f[i]) {
				parts = []string{strings.Join(f[:i], " "), f[i]}
				break
			}
		}
	}
	name := strings.TrimSpace(parts[0])
	var release string
	for _, p := range parts[1:] {
		p = strings.TrimPrefix(strings.TrimSpace(p), "v")
		if startsWithDigit(p) {
			release = p
			break
		}
	}
	majorOnly := false
	switch name {
	case "debian", "raspbian", "debian gnu/linux":
		name = strings.Fields(name)[0]
		majorOnly = true
	case "ubuntu":
	case "almalinux", "alma", "alma linux":
		name, majorOnly = "almalinux", true
	case "rocky linux", "rocky", "rockylinux":
		name, majorOnly = "rocky", true
	case "red hat", "redhat", "rhel", "red hat enterprise linux":
		name, majorOnly = "rhel", true
	case "centos", "oracle linux", "oraclelinux", "ol":
		majorOnly = true
		if name != "centos" {
			name = "oraclelinux"
		}
	case "alpine":
		// keep major.minor
	default:
		if len(parts) == 1 {
			return name
		}
	}
	if release == "" {
		return name
	}
	if majorOnly {
		if i := strings.IndexByte(release, '.'); i >= 0 {
			release = release[:i]
		}
	} else if name == "alpine" || name == "ubuntu" {
		// major.minor only: "22.04.3" → "22.04"
		if i := strings.IndexByte(release, '.'); i >= 0 {
			if j := strings.IndexByte(release[i+1:], '.'); j >= 0 {
				release = release[:i+1+j]
			}
		}
	}
	return name + ":" + release
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// SeverityFromScore answers the CVSS v3 qualitative rating of a score:
// 9.0+ CRITICAL, 7.0+ HIGH, 4.0+ MEDIUM, above 0 LOW, else "".
func SeverityFromScore(score float64) string {
	switch {
	case score >= 9.0:
		return "CRITICAL"
	case score >= 7.0:
		return "HIGH"
	case score >= 4.0:
		return "MEDIUM"
	case score > 0:
		return "LOW"
	}
	return ""
}

// parseTime reads the time formats the feeds use: RFC 3339 with or without
// zone and fraction ("2023-09-12T15:15:24.327", NVD's), or a bare date.
func parseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05Z0700", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
