package actions

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/updates"
	"github.com/patchd/patchd/internal/valid"
)

// Selection modes of DEPLOY_UPDATES.
const (
	ModeAll      = "all"
	ModeSelected = "selected"
	ModeFilters  = "filters"
)

// Approval modes of DEPLOY_UPDATES: which approval decisions let an update go.
//
//   - ApprovedOnly ("approved"): only updates whose key is APPROVED. Also
//     spelled approvedOnly, approved_only, onlyApproved, APPROVED.
//   - NotDeclined ("all", the default): every update except those DECLINED.
//     Also spelled allButDeclined, all_except_declined, notDeclined,
//     excludeDeclined, skipDeclined, ALL.
const (
	ApprovedOnly = "approved"
	NotDeclined  = "all"
)

// Type labels of the filters. With filterVersion 2 an application update is
// a Security Update when it fixes a known vulnerability, else a Regular
// Update; without it applications are picked only by Application Updates.
// An OS update is a Security Update when one of its categories says so (a
// Windows "Security Updates" or "Critical Updates" classification, a Linux
// security advisory), else a Regular Update; its own categories also match.
const (
	TypeSecurity    = "Security Updates"
	TypeRegular     = "Regular Updates"
	TypeApplication = "Application Updates"
)

// Filters narrow a DEPLOY_UPDATES of mode filters; an empty list does not filter.
type Filters struct {
	Severities []string `json:"severities"`
	Types      []string `json:"types"`
	Sources    []string `json:"sources"`
	// CVEs keeps the updates that fix one of these CVEs on the endpoint;
	// KEV those that fix a CVE in CISA's KEV catalog; MinCVSS those that
	// fix a CVE of at least this CVSS base score (0-10); MinEPSS those that
	// fix a CVE of at least this EPSS probability (0-1) (patchd additions,
	// docs/vulnerabilities.md).
	CVEs    []string `json:"cves,omitempty"`
	KEV     bool     `json:"kev,omitempty"`
	MinCVSS *float64 `json:"minCvss,omitempty"`
	MinEPSS *float64 `json:"minEpss,omitempty"`
}

// NeedsFixes tells whether the filters select by the CVEs an update fixes
// (Missing.CVEs, KEV, MaxCVSS and MaxEPSS must then be filled in).
func (s Selection) NeedsFixes() bool {
	f := s.Filters
	return s.Mode == ModeFilters && (len(f.CVEs) > 0 || f.KEV || f.MinCVSS != nil || f.MinEPSS != nil)
}

// cveID is a CVE id such as CVE-2023-4863.
var cveID = regexp.MustCompile(`^CVE-\d{4}-\d{4,}$`)

// Selection is a validated DEPLOY_UPDATES payload.
type Selection struct {
	Mode          string
	ApprovalMode  string
	FilterVersion int
	Keys          []string
	Filters       Filters
}

type selectionBody struct {
	Mode          *string  `json:"mode"`
	ApprovalMode  *string  `json:"approvalMode"`
	FilterVersion *int     `json:"filterVersion"`
	Keys          []string `json:"keys"`
	Filters       *Filters `json:"filters"`
}

// ParseApprovalMode normalizes an approval mode; "" is the default.
func ParseApprovalMode(s string) (string, bool) {
	k := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
	switch k {
	case "", "all", "allbutdeclined", "allexceptdeclined", "notdeclined", "excludedeclined", "skipdeclined", "exceptdeclined", "nondeclined":
		return NotDeclined, true
	case "approved", "approvedonly", "onlyapproved", "approvedupdatesonly", "onlyapprovedupdates", "requireapproval":
		return ApprovedOnly, true
	}
	return "", false
}

var sourceSpellings = map[string][]string{
	"os - mandatory": {updates.SourceOSMandatory}, "osmandatory": {updates.SourceOSMandatory}, "mandatory": {updates.SourceOSMandatory},
	"os - optional": {updates.SourceOSOptional}, "osoptional": {updates.SourceOSOptional}, "optional": {updates.SourceOSOptional},
	"os": {updates.SourceOSMandatory, updates.SourceOSOptional}, "operating system": {updates.SourceOSMandatory, updates.SourceOSOptional},
	"applications": {updates.SourceApps}, "application": {updates.SourceApps}, "apps": {updates.SourceApps},
	"third_party": {updates.SourceApps}, "third-party": {updates.SourceApps}, "thirdparty": {updates.SourceApps},
}

func (b selectionBody) check(prefix string) (Selection, []valid.Problem) {
	var errs valid.Errors
	s := Selection{Mode: ModeAll, ApprovalMode: NotDeclined}
	if b.Mode != nil {
		s.Mode = strings.ToLower(strings.TrimSpace(*b.Mode))
	}
	if b.ApprovalMode != nil {
		m, ok := ParseApprovalMode(*b.ApprovalMode)
		if !ok {
			errs.Add(prefix+"approvalMode", "must be %q (only APPROVED updates) or %q (every update but DECLINED ones, the default)", ApprovedOnly, NotDeclined)
		}
		s.ApprovalMode = m
	}
	if b.FilterVersion != nil {
		s.FilterVersion = *b.FilterVersion
		if s.FilterVersion != 1 && s.FilterVersion != 2 {
			errs.Add(prefix+"filterVersion", "must be 1 or 2")
		}
	}
	switch s.Mode {
	case ModeAll:
	case ModeSelected:
		seen := map[string]bool{}
		for i, k := range b.Keys {
			k = strings.TrimSpace(k)
			if k == "" {
				errs.Add(fmt.Sprintf("%skeys[%d]", prefix, i), "must not be empty")
				continue
			}
			if !seen[k] {
				seen[k] = true
				s.Keys = append(s.Keys, k)
			}
		}
		if len(s.Keys) == 0 && len(b.Keys) == 0 {
			errs.Add(prefix+"keys", "must list at least one update key for mode selected")
		}
	case ModeFilters:
		if b.Filters == nil {
			errs.Add(prefix+"filters", "is required for mode filters: {severities, types, sources}")
			break
		}
		for i, v := range b.Filters.Severities {
			sev, ok := updates.NormalizeSeverity(strings.TrimSpace(v))
			if !ok || strings.TrimSpace(v) == "" {
				errs.Add(fmt.Sprintf("%sfilters.severities[%d]", prefix, i), "must be Critical, Important, Moderate, Low or Unspecified")
				continue
			}
			s.Filters.Severities = append(s.Filters.Severities, sev)
		}
		for i, v := range b.Filters.Types {
			if strings.TrimSpace(v) == "" {
				errs.Add(fmt.Sprintf("%sfilters.types[%d]", prefix, i), "must not be empty")
				continue
			}
			s.Filters.Types = append(s.Filters.Types, strings.TrimSpace(v))
		}
		for i, v := range b.Filters.CVEs {
			id := strings.ToUpper(strings.TrimSpace(v))
			if !cveID.MatchString(id) {
				errs.Add(fmt.Sprintf("%sfilters.cves[%d]", prefix, i), "must be a CVE id such as CVE-2023-4863")
				continue
			}
			if !contains(s.Filters.CVEs, id) {
				s.Filters.CVEs = append(s.Filters.CVEs, id)
			}
		}
		s.Filters.KEV = b.Filters.KEV
		if v := b.Filters.MinCVSS; v != nil {
			if *v < 0 || *v > 10 {
				errs.Add(prefix+"filters.minCvss", "must be a CVSS base score from 0 to 10")
			}
			s.Filters.MinCVSS = v
		}
		if v := b.Filters.MinEPSS; v != nil {
			if *v < 0 || *v > 1 {
				errs.Add(prefix+"filters.minEpss", "must be an EPSS probability from 0 to 1")
			}
			s.Filters.MinEPSS = v
		}
		for i, v := range b.Filters.Sources {
			list, ok := sourceSpellings[strings.ToLower(strings.TrimSpace(v))]
			if !ok {
				errs.Add(fmt.Sprintf("%sfilters.sources[%d]", prefix, i), "must be OS - Mandatory, OS - Optional, Applications, OS or THIRD_PARTY")
				continue
			}
			for _, src := range list {
				if !contains(s.Filters.Sources, src) {
					s.Filters.Sources = append(s.Filters.Sources, src)
				}
			}
		}
	default:
		errs.Add(prefix+"mode", "must be all, selected or filters")
	}
	return s, errs.Problems
}

// stored is the normalized payload kept with an automation or run.
func (s Selection) stored() map[string]any {
	out := map[string]any{"mode": s.Mode, "approvalMode": s.ApprovalMode}
	if s.FilterVersion != 0 {
		out["filterVersion"] = s.FilterVersion
	}
	switch s.Mode {
	case ModeSelected:
		out["keys"] = s.Keys
	case ModeFilters:
		f := s.Filters
		for _, l := range []*[]string{&f.Severities, &f.Types, &f.Sources} {
			if *l == nil {
				*l = []string{}
			}
		}
		out["filters"] = f
	}
	return out
}

// Missing is one update missing on an endpoint, as the selection sees it.
type Missing struct {
	Key         string
	Title       string
	KB          *string
	Severity    string
	Source      string
	Categories  []string
	WingetID    *string
	PackageName *string
	ProductKey  *string
	Latest      *string
	// FixesVulnerability is the severity of the worst known vulnerability
	// this (application) update fixes, or "" when it fixes none known.
	FixesVulnerability string
	// CVEs are the CVEs of the endpoint this update fixes; KEV is set when
	// one of them is in CISA's KEV catalog, MaxCVSS and MaxEPSS are their
	// highest CVSS base score and EPSS probability (read when NeedsFixes).
	CVEs    []string
	KEV     bool
	MaxCVSS *float64
	MaxEPSS *float64
}

// HasSource tells whether the agent has a way to install the update: a
// winget id or package name for applications, a package name (Linux), a KB
// or a product key (Windows, macOS) for OS updates.
func (m Missing) HasSource() bool {
	if updates.ThirdParty(m.Source) {
		return nonEmpty(m.WingetID) || nonEmpty(m.PackageName)
	}
	return nonEmpty(m.PackageName) || nonEmpty(m.KB) || nonEmpty(m.ProductKey)
}

func nonEmpty(s *string) bool { return s != nil && strings.TrimSpace(*s) != "" }

// severity is the update's severity as the filters read it.
func (s Selection) severity(m Missing) string {
	if !updates.ThirdParty(m.Source) {
		return m.Severity
	}
	if s.FilterVersion == 2 && m.FixesVulnerability != "" {
		return m.FixesVulnerability
	}
	return "Unspecified"
}

// types are the type labels the update answers to.
func (s Selection) types(m Missing) []string {
	if updates.ThirdParty(m.Source) {
		if s.FilterVersion != 2 {
			return []string{TypeApplication}
		}
		if m.FixesVulnerability != "" {
			return []string{TypeSecurity}
		}
		return []string{TypeRegular}
	}
	out := append([]string{}, m.Categories...)
	security := false
	for _, c := range m.Categories {
		lc := strings.ToLower(c)
		if strings.Contains(lc, "security") || lc == "critical updates" {
			security = true
		}
	}
	if security {
		out = append(out, TypeSecurity)
	} else {
		out = append(out, TypeRegular)
	}
	return out
}

// matches tells whether the update is chosen by the mode and filters.
func (s Selection) matches(m Missing) bool {
	switch s.Mode {
	case ModeSelected:
		return contains(s.Keys, m.Key)
	case ModeFilters:
		f := s.Filters
		if len(f.Sources) > 0 && !contains(f.Sources, m.Source) {
			return false
		}
		if f.KEV && !m.KEV {
			return false
		}
		if f.MinCVSS != nil && (m.MaxCVSS == nil || *m.MaxCVSS < *f.MinCVSS) {
			return false
		}
		if f.MinEPSS != nil && (m.MaxEPSS == nil || *m.MaxEPSS < *f.MinEPSS) {
			return false
		}
		if len(f.CVEs) > 0 && !slices.ContainsFunc(m.CVEs, func(c string) bool { return contains(f.CVEs, c) }) {
			return false
		}
		if len(f.Severities) > 0 && !containsFold(f.Severities, s.severity(m)) {
			return false
		}
		if len(f.Types) > 0 {
			found := false
			for _, t := range s.types(m) {
				if containsType(f.Types, t) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// approved tells whether the approval decision on the key lets it go.
func (s Selection) approved(decision string) bool {
	if s.ApprovalMode == ApprovedOnly {
		return decision == "APPROVED"
	}
	return decision != "DECLINED"
}

// Result is the selection on one endpoint.
type Result struct {
	Payload agentproto.DeployUpdatesPayload
	// Nothing explains an empty selection; it starts with "Nothing to install".
	Nothing string
}

// Select resolves the selection on one endpoint's missing updates, with the
// organization's approval decisions by key (absent = NEW).
func (s Selection) Select(missing []Missing, approvals map[string]string) Result {
	var r Result
	r.Payload.Updates = []agentproto.DeployUpdate{}
	matched, unapproved, sourceless := 0, 0, 0
	for _, m := range missing {
		if !s.matches(m) {
			continue
		}
		matched++
		if !s.approved(approvals[m.Key]) {
			unapproved++
			continue
		}
		if !m.HasSource() {
			sourceless++
			continue
		}
		r.Payload.Updates = append(r.Payload.Updates, agentproto.DeployUpdate{Key: m.Key, Title: m.Title, KB: m.KB, WingetID: m.WingetID,
			PackageName: m.PackageName, LatestVersion: m.Latest, ProductKey: m.ProductKey})
	}
	if len(r.Payload.Updates) > 0 {
		return r
	}
	switch {
	case matched == 0:
		r.Nothing = "Nothing to install: no missing update on this endpoint matches the selection"
	default:
		var why []string
		if unapproved > 0 {
			if s.ApprovalMode == ApprovedOnly {
				why = append(why, fmt.Sprintf("%d not approved", unapproved))
			} else {
				why = append(why, fmt.Sprintf("%d declined", unapproved))
			}
		}
		if sourceless > 0 {
			why = append(why, fmt.Sprintf("%d without a package source", sourceless))
		}
		r.Nothing = fmt.Sprintf("Nothing to install: %d matching update(s), %s", matched, strings.Join(why, ", "))
	}
	return r
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

// containsType compares type labels loosely: case, and a trailing "s"
// ("Security Update" and "security updates" are the same label).
func containsType(list []string, v string) bool {
	norm := func(s string) string { return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "s") }
	for _, x := range list {
		if norm(x) == norm(v) {
			return true
		}
	}
	return false
}
