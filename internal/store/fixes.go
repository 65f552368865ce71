package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/vulns/match"
	vver "github.com/patchd/patchd/internal/vulns/version"
)

// UpdateFix is a missing update that fixes a CVE on the endpoints that
// miss it: the update's key, title, KB and severity, the CVE, and on how
// many endpoints the update removes the CVE.
type UpdateFix struct {
	Key, Title, KB, Severity string
	CVEID                    string
	Endpoints                int
}

// FixingUpdates answers the missing updates that fix the CVE on the
// organization's endpoints, most endpoints first.
func (s *Store) FixingUpdates(ctx context.Context, orgID, cveID string) ([]UpdateFix, error) {
	return s.updateFixes(ctx, orgID, `ev.cve_id = ?`, cveID,
		`SELECT DISTINCT endpoint_id FROM endpoint_vulns WHERE org_id = ? AND cve_id = ?`, func(p fixPair) bool { return p.CVEID == cveID })
}

// FixedCVEs answers the CVEs the update of key fixes on the organization's
// endpoints that miss it, most endpoints first.
func (s *Store) FixedCVEs(ctx context.Context, orgID, key string) ([]UpdateFix, error) {
	return s.updateFixes(ctx, orgID, `eu.key = ?`, key,
		`SELECT endpoint_id FROM endpoint_updates WHERE org_id = ? AND key = ?`, func(p fixPair) bool { return p.Key == key })
}

// updateFixes counts, per update and CVE, the endpoints on which the
// update fixes the CVE (fixPairs, kbFixPairs), most endpoints first.
//
// The Windows updates are paired on the endpoints endpointsQuery answers
// (with orgID and arg), keeping the pairs keep accepts.
func (s *Store) updateFixes(ctx context.Context, orgID, cond, arg, endpointsQuery string, keep func(fixPair) bool) ([]UpdateFix, error) {
	pairs, err := fixPairs(ctx, s.query, orgID, cond, arg)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, endpointsQuery, orgID, arg)
	var ids []any
	if err := appendRows(&ids, rows, err, scanStringArg); err != nil {
		return nil, fmt.Errorf("store: fixing updates: %w", err)
	}
	kb, err := kbFixPairs(ctx, s.query, orgID, ids)
	if err != nil {
		return nil, err
	}
	for _, p := range kb {
		if keep(p) {
			pairs = append(pairs, p)
		}
	}
	type pair struct{ key, cve string }
	fixes := map[pair]*UpdateFix{}
	counted := map[[3]string]bool{} // an endpoint counts once per update and CVE
	for _, p := range pairs {
		k := pair{p.Key, p.CVEID}
		if fixes[k] == nil {
			fixes[k] = &UpdateFix{Key: p.Key, Title: p.Title, KB: p.KB, Severity: p.Severity, CVEID: p.CVEID}
		}
		if c := [3]string{p.Key, p.CVEID, p.EndpointID}; !counted[c] {
			counted[c] = true
			fixes[k].Endpoints++
		}
	}
	out := make([]UpdateFix, 0, len(fixes))
	for _, f := range fixes {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b UpdateFix) int {
		if a.Endpoints != b.Endpoints {
			return b.Endpoints - a.Endpoints
		}
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.CVEID, b.CVEID)
	})
	return out, nil
}

// fixPair is one missing update of an endpoint that fixes one of its CVEs.
// Software is the finding's software for a package or application update
// (fixPairs); a Windows update (kbFixPairs) fixes the CVE's Windows
// findings, whose source is a KB.
type fixPair struct {
	EndpointID, Key, Title, KB, Severity, CVEID, Software string
	KEV                                                   bool
}

// fixPairs pairs endpoints' CVE findings with their missing package and
// application updates that fix them, once per endpoint, update and CVE:
// the update of the vulnerable package or application (updateNames) whose
// latest version reaches the fixed version. cond selects the findings (on
// ev, the finding, and eu, the update). Windows updates are paired by
// kbFixPairs.
func fixPairs(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), orgID, cond string, args ...any) ([]fixPair, error) {
	rows, err := query(ctx, `SELECT eu.key, eu.title, COALESCE(eu.kb, ''), eu.severity, ev.cve_id, ev.software, ev.endpoint_id, ev.source,
		COALESCE(ev.fixed_in, ''), COALESCE(eu.latest_version, ''), e.platform, COALESCE(e.os, ''), k.cve_id IS NOT NULL,
		COALESCE(eu.package_name, ''), eu.winget_id IS NOT NULL, COALESCE(eu.installed_version, ''), ev.version
		FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id
		JOIN endpoint_updates eu ON eu.org_id = ev.org_id AND eu.endpoint_id = ev.endpoint_id AND eu.kb IS NULL
			AND (eu.package_name = ev.software OR lower(eu.title) = lower(ev.software)
				OR (eu.winget_id IS NOT NULL AND (substr(lower(eu.title), 1, length(ev.software)) = lower(ev.software)
					OR eu.installed_version = ev.version)))
		LEFT JOIN vuln_kev k ON k.cve_id = ev.cve_id
		WHERE ev.org_id = ? AND `+cond, append([]any{orgID}, args...)...)
	var out []fixPair
	seen := map[[4]string]bool{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var f fixPair
		var source, fixedIn, latest, platform, osName, pkg, installed, version string
		var winget bool
		if err := r.Scan(&f.Key, &f.Title, &f.KB, &f.Severity, &f.CVEID, &f.Software, &f.EndpointID, &source, &fixedIn, &latest, &platform, &osName, &f.KEV,
			&pkg, &winget, &installed, &version); err != nil {
			return err
		}
		if !updateNames(f.Title, pkg, winget, installed, latest, f.Software, version) {
			return nil
		}
		{
			// A package or application update fixes the CVE when it
			// reaches the fixed version.
			scheme := vver.Generic
			if platform == "linux" {
				// The distribution is the first word of the operating
				// system's name ("Debian GNU/Linux 13", "Rocky Linux 9.5").
				distro, _, _ := strings.Cut(strings.ToLower(osName), " ")
				scheme = vver.SchemeFor(distro)
			}
			if fixedIn == "" || latest == "" || vver.Compare(scheme, latest, fixedIn) < 0 {
				return nil
			}
		}
		id := [4]string{f.Key, f.CVEID, f.EndpointID, f.Software}
		if !seen[id] {
			seen[id] = true
			out = append(out, f)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: fixing updates: %w", err)
	}
	return out, nil
}

// updateNames reports whether a missing package or application update is
// the update of a finding's software (software, installed at version):
//
//   - a package update (Linux, macOS) by its package name, the finding's
//     software being the source package;
//   - an update titled with the software's name;
//   - a Windows application update as patchd-agent reports it from winget
//     upgrade: titled with winget's name of the installed product and the
//     version it goes to ("Google Chrome 131.0.6778.140", "Mozilla Firefox
//     (x64 en-US) 132.0", "Microsoft 365 Apps for enterprise - en-us
//     16.0.19426.20186"; a name winget cut short loses its "…"), its
//     installed version winget's. The name is the finding's software (the
//     product's display name, "Google Chrome", "Mozilla Firefox") followed
//     by nothing or by more words, or names an Office install of the
//     finding's family (Office is found by family, "Microsoft 365 Apps");
//     and the installed version, when winget knows it, is the finding's.
func updateNames(title, pkg string, winget bool, installed, latest, software, version string) bool {
	if pkg == software || strings.EqualFold(title, software) {
		return true
	}
	if !winget {
		return false
	}
	name := strings.TrimSpace(strings.TrimSuffix(title, " "+latest))
	known := installed != "" && !strings.EqualFold(installed, "Unknown") && !strings.ContainsAny(installed[:1], "<>")
	if known && installed != version && vver.Compare(vver.Generic, installed, version) != 0 {
		return false
	}
	if n, sw := strings.ToLower(name), strings.ToLower(software); strings.HasPrefix(n, sw) {
		rest := n[len(sw):]
		if rest == "" || !isWordChar(rest[0]) {
			return true
		}
	}
	return match.InstalledOfficeFamily(name) == software && software != ""
}

// isWordChar is true for a letter or digit byte (a name continuing the
// same word: "Zoom" is not "Zoomit").
func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// EndpointUpdateKeys answers the update key of each of an endpoint's
// missing updates, by the missing update's id.
func (s *Store) EndpointUpdateKeys(ctx context.Context, orgID, endpointID string) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT id, key FROM endpoint_updates WHERE org_id = ? AND endpoint_id = ?`, orgID, endpointID)
	out := map[string]string{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, key string
		if err := r.Scan(&id, &key); err != nil {
			return err
		}
		out[id] = key
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: endpoint update keys: %w", err)
	}
	return out, nil
}

// fillAllUpdateCVEs fills Update.cves of a page of missing updates: the
// Windows findings each KB fixes through Microsoft's data (cumulative
// updates included, fillUpdateCVEs), and the findings a Linux package or
// application update fixes by reaching the fixed version (fixPairs).
func (r *ReadTx) fillAllUpdateCVEs(ctx context.Context, orgID string, page []apiv1.Update) error {
	if err := r.fillUpdateCVEs(ctx, orgID, page); err != nil {
		return err
	}
	if err := r.fillUpdateRisk(ctx, orgID, page); err != nil {
		return err
	}
	if len(page) == 0 {
		return nil
	}
	var ids []any
	seen := map[string]bool{}
	for _, u := range page {
		if !seen[u.EndpointID] {
			seen[u.EndpointID] = true
			ids = append(ids, u.EndpointID)
		}
	}
	pairs, err := fixPairs(ctx, r.query, orgID, `eu.kb IS NULL AND ev.endpoint_id IN (`+placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return err
	}
	type at struct{ endpoint, key string }
	fixes := map[at][]string{}
	for _, p := range pairs {
		fixes[at{p.EndpointID, p.Key}] = append(fixes[at{p.EndpointID, p.Key}], p.CVEID)
	}
	for i := range page {
		for _, c := range fixes[at{page[i].EndpointID, page[i].Key}] {
			if !slices.Contains(page[i].CVEs, c) {
				page[i].CVEs = append(page[i].CVEs, c)
			}
		}
		slices.Sort(page[i].CVEs)
	}
	return nil
}

// kbFixPairs pairs the endpoints' missing Windows updates with the Windows
// findings each fixes, as Update.cves counts them (fillKBCVEs: a later
// cumulative update fixes what an earlier KB fixed), a page of endpoints
// at a time.
func kbFixPairs(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), orgID string, endpointIDs []any) ([]fixPair, error) {
	var out []fixPair
	const chunk = 500
	for start := 0; start < len(endpointIDs); start += chunk {
		part := endpointIDs[start:min(start+chunk, len(endpointIDs))]
		rows, err := query(ctx, `SELECT endpoint_id, key, title, kb, severity FROM endpoint_updates
			WHERE org_id = ? AND kb IS NOT NULL AND endpoint_id IN (`+placeholders(len(part))+`)`, append([]any{orgID}, part...)...)
		page, err := scanRows(rows, err, func(r rowScanner) (apiv1.Update, error) {
			var u apiv1.Update
			var kb string
			err := r.Scan(&u.EndpointID, &u.Key, &u.Title, &kb, &u.Severity)
			u.KB = &kb
			return u, err
		})
		if err != nil {
			return nil, fmt.Errorf("store: Windows fixes: %w", err)
		}
		if err := fillKBCVEs(ctx, query, orgID, page); err != nil {
			return nil, err
		}
		var cves []any
		for _, u := range page {
			for _, c := range u.CVEs {
				cves = append(cves, c)
			}
		}
		kev := map[string]bool{}
		if len(cves) > 0 {
			rows, err := query(ctx, `SELECT cve_id FROM vuln_kev WHERE cve_id IN (`+placeholders(len(cves))+`)`, cves...)
			ids, err := scanRows(rows, err, scanString)
			if err != nil {
				return nil, fmt.Errorf("store: Windows fixes: %w", err)
			}
			for _, id := range ids {
				kev[id] = true
			}
		}
		for _, u := range page {
			for _, c := range u.CVEs {
				out = append(out, fixPair{EndpointID: u.EndpointID, Key: u.Key, Title: u.Title, KB: *u.KB, Severity: u.Severity, CVEID: c, KEV: kev[c]})
			}
		}
	}
	return out, nil
}

// findingFixes is the missing update that fixes each finding that one
// fixes (the lowest key when several do), paired as Update.cves pairs them:
// a Windows finding (its source a KB) with the endpoint's missing Windows
// updates that fix its CVE (kbFixPairs: a later cumulative update counts),
// a package or application finding with the update of its software that
// reaches the fixed version (fixPairs). The "Update Available" column of
// the findings reports.
type findingFixes struct {
	windows map[[2]string]string // endpoint, CVE → key
	other   map[[3]string]string // endpoint, CVE, software → key
}

// update answers the key of the missing update that fixes the finding, ""
// when none does.
func (f findingFixes) update(endpoint, cve, software, source string) string {
	if isKB(source) {
		return f.windows[[2]string{endpoint, cve}]
	}
	return f.other[[3]string{endpoint, cve, software}]
}

// findingFixes pairs the organization's findings with the missing updates
// that fix them.
func (s *Store) findingFixes(ctx context.Context, orgID string) (findingFixes, error) {
	out := findingFixes{windows: map[[2]string]string{}, other: map[[3]string]string{}}
	pairs, err := fixPairs(ctx, s.query, orgID, `eu.kb IS NULL`)
	if err != nil {
		return out, err
	}
	for _, p := range pairs {
		k := [3]string{p.EndpointID, p.CVEID, p.Software}
		if o, ok := out.other[k]; !ok || p.Key < o {
			out.other[k] = p.Key
		}
	}
	// The endpoints with a Windows finding and a missing Windows update.
	rows, err := s.query(ctx, `SELECT DISTINCT ev.endpoint_id FROM endpoint_vulns ev WHERE ev.org_id = ? AND ev.source LIKE 'KB%'
		AND EXISTS (SELECT 1 FROM endpoint_updates eu WHERE eu.endpoint_id = ev.endpoint_id AND eu.kb IS NOT NULL)`, orgID)
	var ids []any
	if err := appendRows(&ids, rows, err, scanStringArg); err != nil {
		return out, fmt.Errorf("store: fixing updates: %w", err)
	}
	kb, err := kbFixPairs(ctx, s.query, orgID, ids)
	if err != nil {
		return out, err
	}
	for _, p := range kb {
		k := [2]string{p.EndpointID, p.CVEID}
		if o, ok := out.windows[k]; !ok || p.Key < o {
			out.windows[k] = p.Key
		}
	}
	return out, nil
}
