package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/vulns"
	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/match"
)

// The per-organization vulnerability results: which endpoint has which CVE
// (endpoint_vulns), the organization's catalog of CVEs with endpoint counts
// (org_vulns), accepted risks and compensating controls, and remediation
// policies. The results are written by the matching worker
// (internal/vulndb); an inventory change only marks its endpoint dirty.

func init() {
	endpointChangeHooks = append(endpointChangeHooks, func(ctx context.Context, tx *Tx, orgID string, endpointIDs []string) error {
		return tx.markVulnDirty(ctx, orgID, endpointIDs)
	})
	endpointDeleteHooks = append(endpointDeleteHooks, func(ctx context.Context, tx *Tx, orgID, endpointID string) error {
		return tx.dropEndpointVulns(ctx, orgID, endpointID)
	})
}

// markVulnDirty queues distinct endpoints for matching: one upsert, so
// that the inventory transaction stays fast.
func (tx *Tx) markVulnDirty(ctx context.Context, orgID string, endpointIDs []string) error {
	var err error
	if len(endpointIDs) == 1 {
		_, err = tx.exec(ctx, `INSERT INTO vuln_dirty (endpoint_id, org_id, gen, marked_at) VALUES (?, ?, 0, ?)
			ON CONFLICT (endpoint_id) DO UPDATE SET gen = vuln_dirty.gen + 1, marked_at = excluded.marked_at`,
			endpointIDs[0], orgID, millis(time.Now()))
	} else {
		// The endpoints as one JSON array, so that the statement's text does
		// not change with their number (WHERE TRUE: SQLite's parser would
		// otherwise read ON CONFLICT as a join's).
		ids, _ := json.Marshal(endpointIDs)
		from := `json_each(?) AS d`
		if tx.s.engine == Postgres {
			from = `json_array_elements_text(CAST(? AS json)) AS d(value)`
		}
		_, err = tx.exec(ctx, `INSERT INTO vuln_dirty (endpoint_id, org_id, gen, marked_at) SELECT d.value, ?, 0, ? FROM `+from+` WHERE TRUE
			ON CONFLICT (endpoint_id) DO UPDATE SET gen = vuln_dirty.gen + 1, marked_at = excluded.marked_at`,
			orgID, millis(time.Now()), string(ids))
	}
	if err != nil {
		return fmt.Errorf("store: mark endpoints for matching: %w", err)
	}
	return nil
}

// lockEndpoints takes the row locks of endpoints on PostgreSQL, in id
// order, before results are written: the matcher and an endpoint's deletion
// then take their locks in the same order (endpoints, then org_vulns).
func (tx *Tx) lockEndpoints(ctx context.Context, ids []string) (map[string]bool, error) {
	exists := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return exists, nil
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	q := `SELECT id FROM endpoints WHERE id IN (` + placeholders(len(sorted)) + `) ORDER BY id`
	if tx.s.engine == Postgres {
		q += ` FOR UPDATE`
	}
	rows, err := tx.query(ctx, q, anySlice(sorted)...)
	if err := addToSet(exists, rows, err); err != nil {
		return nil, fmt.Errorf("store: lock endpoints: %w", err)
	}
	return exists, nil
}

func (tx *Tx) dropEndpointVulns(ctx context.Context, orgID, endpointID string) error {
	if _, err := tx.lockEndpoints(ctx, []string{endpointID}); err != nil {
		return err
	}
	rows, err := tx.query(ctx, `SELECT DISTINCT cve_id FROM endpoint_vulns WHERE endpoint_id = ? ORDER BY cve_id`, endpointID)
	cves, err := scanRows(rows, err, scanString)
	if err != nil {
		return fmt.Errorf("store: endpoint vulnerabilities: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM endpoint_vulns WHERE endpoint_id = ?`, endpointID); err != nil {
		return fmt.Errorf("store: drop endpoint vulnerabilities: %w", err)
	}
	for _, c := range cves {
		if _, err := tx.exec(ctx, `UPDATE org_vulns SET endpoints_count = endpoints_count - 1 WHERE org_id = ? AND cve_id = ?`, orgID, c); err != nil {
			return fmt.Errorf("store: drop endpoint vulnerabilities: %w", err)
		}
	}
	if _, err := tx.exec(ctx, `DELETE FROM vuln_dirty WHERE endpoint_id = ?`, endpointID); err != nil {
		return fmt.Errorf("store: drop endpoint vulnerabilities: %w", err)
	}
	return nil
}

// DirtyEndpoint is an endpoint waiting to be matched; Gen is the mark the
// worker saw.
type DirtyEndpoint struct {
	ID    string
	OrgID string
	Gen   int64
}

// DirtyEndpoints answers up to limit endpoints waiting to be matched,
// oldest mark first.
func (s *Store) DirtyEndpoints(ctx context.Context, limit int) ([]DirtyEndpoint, error) {
	rows, err := s.query(ctx, `SELECT endpoint_id, org_id, gen FROM vuln_dirty ORDER BY marked_at, endpoint_id LIMIT ?`, limit)
	var out []DirtyEndpoint
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var d DirtyEndpoint
		if err := r.Scan(&d.ID, &d.OrgID, &d.Gen); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: dirty endpoints: %w", err)
	}
	return out, nil
}

// MatchInput is what the matcher needs of one endpoint.
type MatchInput struct {
	ID       string
	OrgID    string
	Endpoint match.Endpoint
}

// OrgEndpointIDs answers the ids of an organization's endpoints, in id
// order; with orgID empty, of every organization.
func (s *Store) OrgEndpointIDs(ctx context.Context, orgID string) ([]string, error) {
	q, args := `SELECT id FROM endpoints ORDER BY id`, []any(nil)
	if orgID != "" {
		q, args = `SELECT id FROM endpoints WHERE org_id = ? ORDER BY id`, []any{orgID}
	}
	rows, err := s.query(ctx, q, args...)
	out, err := scanRows(rows, err, scanString)
	if err != nil {
		return nil, fmt.Errorf("store: endpoint ids: %w", err)
	}
	return out, nil
}

// MatchInputs reads the platform, distribution and installed software of
// the endpoints ids (those that exist).
func (s *Store) MatchInputs(ctx context.Context, ids []string) ([]MatchInput, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := anySlice(ids)
	rows, err := s.query(ctx, `SELECT id, org_id, platform, COALESCE(distro, ''), COALESCE(os, ''), COALESCE(os_version, ''),
		COALESCE(os_build, ''), COALESCE(arch, ''), COALESCE(type, ''), COALESCE(os_installation_type, '')
		FROM endpoints WHERE id IN (`+placeholders(len(ids))+`)`, args...)
	pos := map[string]int{}
	var out []MatchInput
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var in MatchInput
		var osName, osVersion, osBuild, arch, typ, installType string
		if err := r.Scan(&in.ID, &in.OrgID, &in.Endpoint.Platform, &in.Endpoint.Distro, &osName, &osVersion,
			&osBuild, &arch, &typ, &installType); err != nil {
			return err
		}
		if in.Endpoint.Platform == "windows" {
			in.Endpoint.Windows = match.WindowsOS{Name: osName, Build: osBuild, Arch: arch, InstallationType: installType, Server: typ == "server"}
		}
		in.Endpoint.Distro = distroRelease(in.Endpoint.Distro, osName, osVersion)
		pos[in.ID] = len(out)
		out = append(out, in)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: match inputs: %w", err)
	}
	rows, err = s.query(ctx, `SELECT es.endpoint_id, t.name, es.version_key, COALESCE(es.publisher, ''), COALESCE(es.install_type, ''),
		COALESCE(es.source_package, '') FROM endpoint_software es JOIN software_titles t ON t.id = es.title_id
		WHERE es.endpoint_id IN (`+placeholders(len(ids))+`) AND es.version_key <> ''`, args...)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var id string
		var sw match.Software
		if err := row.Scan(&id, &sw.Name, &sw.Version, &sw.Publisher, &sw.InstallType, &sw.SourcePackage); err != nil {
			return err
		}
		if i, ok := pos[id]; ok {
			out[i].Endpoint.Software = append(out[i].Endpoint.Software, sw)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: match inputs: %w", err)
	}
	return out, nil
}

// distroRelease completes a distribution id ("debian", as agents report
// it) with the release from the OS version ("12.8" → "debian 12.8"), which
// the matcher normalises to the release advisories are published for.
func distroRelease(distro, osName, osVersion string) string {
	if distro == "" || strings.ContainsAny(distro, "0123456789") {
		return distro
	}
	if v := strings.TrimSpace(osVersion); v != "" && v[0] >= '0' && v[0] <= '9' {
		return distro + " " + v
	}
	if strings.ContainsAny(osName, "0123456789") {
		return osName
	}
	return distro
}

// MatchResult is the findings of one endpoint. Dirty, when not nil, is the
// mark that the findings answer: it is cleared unless the endpoint was
// marked again meanwhile.
type MatchResult struct {
	EndpointID string
	OrgID      string
	Findings   []match.Finding
	Dirty      *DirtyEndpoint
}

type vulnKey struct{ cve, software string }

var (
	findingColumns = []string{"org_id", "endpoint_id", "cve_id", "software", "version", "fixed_in", "source", "first_seen_at"}
	findingTypes   = []string{"text", "text", "text", "text", "text", "text", "text", "bigint"}
)

type storedFinding struct {
	version, fixedIn, source string
}

// ResultStats counts what SaveMatchResults changed.
type ResultStats struct {
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Changed int `json:"changed"`
}

// SaveMatchResults stores the findings of endpoints in one transaction, as
// a difference against what is stored (a finding seen before keeps its
// first_seen_at), and keeps the organizations' CVE catalogs counted.
// Results of endpoints deleted meanwhile are dropped.
func (s *Store) SaveMatchResults(ctx context.Context, results []MatchResult, now time.Time) (ResultStats, error) {
	var st ResultStats
	if len(results) == 0 {
		return st, nil
	}
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.EndpointID
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		st = ResultStats{}
		exists, stored, err := tx.lockFindings(ctx, ids)
		if err != nil {
			return err
		}
		type orgCVE struct{ org, cve string }
		delta := map[orgCVE]int{}
		inserts := rowSet{columns: findingColumns, types: findingTypes}
		updates := rowSet{columns: []string{"endpoint_id", "cve_id", "software", "version", "fixed_in", "source"},
			types: []string{"text", "text", "text", "text", "text", "text"}}
		deletes := rowSet{columns: []string{"endpoint_id", "cve_id", "software"}, types: []string{"text", "text", "text"}}
		for _, r := range results {
			if !exists[r.EndpointID] {
				continue
			}
			old := stored[r.EndpointID]
			oldCVEs := map[string]bool{}
			for k := range old {
				oldCVEs[k.cve] = true
			}
			newCVEs := map[string]bool{}
			seen := map[vulnKey]bool{}
			for _, f := range r.Findings {
				k := vulnKey{f.CVEID, f.Software}
				if seen[k] {
					continue
				}
				seen[k] = true
				newCVEs[f.CVEID] = true
				o, ok := old[k]
				switch {
				case !ok:
					inserts.rows = append(inserts.rows, []any{r.OrgID, r.EndpointID, f.CVEID, f.Software, f.Version, nullIfEmpty(f.FixedIn), f.Source, millis(now)})
					st.Added++
				case o.version != f.Version || o.fixedIn != f.FixedIn || o.source != f.Source:
					updates.rows = append(updates.rows, []any{r.EndpointID, f.CVEID, f.Software, f.Version, nullIfEmpty(f.FixedIn), f.Source})
					st.Changed++
				}
			}
			for k := range old {
				if !seen[k] {
					deletes.rows = append(deletes.rows, []any{r.EndpointID, k.cve, k.software})
					st.Removed++
				}
			}
			for c := range newCVEs {
				if !oldCVEs[c] {
					delta[orgCVE{r.OrgID, c}]++
				}
			}
			for c := range oldCVEs {
				if !newCVEs[c] {
					delta[orgCVE{r.OrgID, c}]--
				}
			}
		}
		catalog := rowSet{columns: []string{"org_id", "cve_id", "delta", "detected_at"}, types: []string{"text", "text", "bigint", "bigint"}}
		for k, d := range delta {
			if d != 0 {
				catalog.rows = append(catalog.rows, []any{k.org, k.cve, int64(d), millis(now)})
			}
		}
		sort.Slice(catalog.rows, func(i, j int) bool {
			a, b := catalog.rows[i], catalog.rows[j]
			if a[0] != b[0] {
				return a[0].(string) < b[0].(string)
			}
			return a[1].(string) < b[1].(string)
		})
		clears := rowSet{columns: []string{"endpoint_id", "gen"}, types: []string{"text", "bigint"}}
		for _, r := range results {
			if r.Dirty != nil {
				clears.rows = append(clears.rows, []any{r.Dirty.ID, r.Dirty.Gen})
			}
		}
		cols := strings.Join(findingColumns, ", ")
		return tx.writeSets(ctx, []setWrite{
			{deletes, func(v string) string {
				return `DELETE FROM endpoint_vulns WHERE (endpoint_id, cve_id, software) IN (SELECT endpoint_id, cve_id, software FROM ` + v + `)`
			}},
			{updates, func(v string) string {
				return `UPDATE endpoint_vulns SET version = ` + v + `.version, fixed_in = ` + v + `.fixed_in, source = ` + v + `.source FROM ` + v + `
					WHERE endpoint_vulns.endpoint_id = ` + v + `.endpoint_id AND endpoint_vulns.cve_id = ` + v + `.cve_id AND endpoint_vulns.software = ` + v + `.software`
			}},
			{inserts, func(v string) string {
				return `INSERT INTO endpoint_vulns (` + cols + `) SELECT ` + cols + ` FROM ` + v
			}},
			// In key order (sorted above), so that concurrent writers lock
			// catalog rows in one order. WHERE true: SQLite needs it to
			// parse an upsert whose rows come from a SELECT.
			{catalog, func(v string) string {
				return `INSERT INTO org_vulns (org_id, cve_id, endpoints_count, first_detected_at, last_detected_at)
					SELECT org_id, cve_id, delta, detected_at, detected_at FROM ` + v + ` WHERE true ORDER BY org_id, cve_id
					ON CONFLICT (org_id, cve_id) DO UPDATE SET endpoints_count = org_vulns.endpoints_count + excluded.endpoints_count,
					last_detected_at = CASE WHEN excluded.endpoints_count > 0 THEN excluded.last_detected_at ELSE org_vulns.last_detected_at END`
			}},
			{clears, func(v string) string {
				return `DELETE FROM vuln_dirty WHERE (endpoint_id, gen) IN (SELECT endpoint_id, gen FROM ` + v + `)`
			}},
		})
	})
	return st, err
}

// lockFindings reads the stored findings of the endpoints ids in one
// query, which on PostgreSQL also locks the endpoint rows in id order (as
// lockEndpoints does: the matcher and an endpoint's deletion lock in the
// same order) and turns synchronous_commit off for the transaction (see
// asyncCommit). exists tells the endpoints that still exist.
//
// The lock is FOR NO KEY UPDATE, not FOR UPDATE. What the matcher needs is
// that nobody else rewrites these endpoints' findings or deletes the
// endpoints while it writes the difference it computed against what it
// read: another matcher (a replica's) takes the same lock, and an
// endpoint's deletion takes FOR UPDATE (lockEndpoints, then the DELETE),
// both of which conflict with FOR NO KEY UPDATE, so the read-modify-write
// stays serialized. What it must not do is block the foreign-key checks of
// rows that merely reference an endpoint (alert_reboots, group_members,
// inventory rows): those take FOR KEY SHARE, which conflicts with FOR
// UPDATE but not with FOR NO KEY UPDATE. With FOR UPDATE, the reboot
// tracker's INSERT INTO alert_reboots … SELECT … FROM endpoints, whose
// key-share locks are taken in the order of its rows, and this lock, taken
// in id order, deadlocked. The matcher never changes an
// endpoint's id, so the weaker lock is all it needs.
func (tx *Tx) lockFindings(ctx context.Context, ids []string) (map[string]bool, map[string]map[vulnKey]storedFinding, error) {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	q := `SELECT e.id, ev.cve_id, ev.software, ev.version, ev.fixed_in, ev.source
		FROM endpoints e LEFT JOIN endpoint_vulns ev ON ev.endpoint_id = e.id
		WHERE e.id IN (` + placeholders(len(sorted)) + `) ORDER BY e.id`
	if tx.s.engine == Postgres {
		q = `WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
			SELECT e.id, ev.cve_id, ev.software, ev.version, ev.fixed_in, ev.source
			FROM async CROSS JOIN endpoints e LEFT JOIN endpoint_vulns ev ON ev.endpoint_id = e.id
			WHERE e.id IN (` + placeholders(len(sorted)) + `) ORDER BY e.id FOR NO KEY UPDATE OF e`
	}
	rows, err := tx.query(ctx, q, anySlice(sorted)...)
	exists := make(map[string]bool, len(ids))
	out := make(map[string]map[vulnKey]storedFinding, len(ids))
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		var cve, software, version, fixedIn, source sql.NullString
		if err := r.Scan(&id, &cve, &software, &version, &fixedIn, &source); err != nil {
			return err
		}
		exists[id] = true
		if !cve.Valid {
			return nil // no finding
		}
		m := out[id]
		if m == nil {
			m = map[vulnKey]storedFinding{}
			out[id] = m
		}
		m[vulnKey{cve.String, software.String}] = storedFinding{version: version.String, fixedIn: fixedIn.String, source: source.String}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("store: stored findings: %w", err)
	}
	return exists, out, nil
}

// EndpointFinding is one stored finding of an endpoint.
type EndpointFinding struct {
	CVEID       string    `json:"cveId"`
	Software    string    `json:"software"`
	Version     string    `json:"version"`
	FixedIn     string    `json:"fixedIn,omitempty"`
	Source      string    `json:"source"`
	FirstSeenAt time.Time `json:"firstSeenAt"`
}

// EndpointFindings answers the stored findings of an endpoint of orgID.
func (s *Store) EndpointFindings(ctx context.Context, orgID, endpointID string) ([]EndpointFinding, error) {
	rows, err := s.query(ctx, `SELECT cve_id, software, version, COALESCE(fixed_in, ''), source, first_seen_at FROM endpoint_vulns
		WHERE org_id = ? AND endpoint_id = ? ORDER BY software, cve_id`, orgID, endpointID)
	var out []EndpointFinding
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var f EndpointFinding
		var first int64
		if err := r.Scan(&f.CVEID, &f.Software, &f.Version, &f.FixedIn, &f.Source, &first); err != nil {
			return err
		}
		f.FirstSeenAt = fromMillis(first)
		out = append(out, f)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: endpoint findings: %w", err)
	}
	return out, nil
}

// VulnQuery filters the vulnerability list.
type VulnQuery struct {
	OrgID   string
	MinCVSS *float64
	KEVOnly bool
	// MinEPSS keeps the CVEs of at least this EPSS probability; Sort
	// "risk" orders by risk score, highest first (patchd additions).
	MinEPSS *float64
	Sort    string
	// IncludeAccepted also lists CVEs with an active accepted risk or
	// compensating control (left out by default).
	IncludeAccepted bool
	// CVEID keeps that CVE alone.
	CVEID string
	// Remediation keeps the CVEs of one remediation status (vulns.StatusOverdue,
	// StatusDueSoon, StatusDueLater), evaluated at Now.
	Remediation   string
	Limit, Offset int
	// Now evaluates remediation statuses and exception expiries.
	Now time.Time
}

// vulnFrom is what the vulnerability list reads: the fleet's CVEs with the
// NVD's record (or, for a CVE the NVD has not scored yet, Microsoft's score
// and title), the KEV entry and the active exception, if any (one per
// organization and CVE; its expiry is the first argument).
const vulnFrom = ` FROM org_vulns ov LEFT JOIN vuln_cves c ON c.id = ov.cve_id LEFT JOIN vuln_kev k ON k.cve_id = ov.cve_id
	LEFT JOIN msrc_cves m ON m.cve_id = ov.cve_id LEFT JOIN vuln_epss p ON p.cve_id = ov.cve_id
	LEFT JOIN vuln_exceptions x ON x.org_id = ov.org_id AND x.cve_id = ov.cve_id AND (x.expires_at IS NULL OR x.expires_at > ?) WHERE `

// vulnOrder is the list's order: highest CVSS first, unscored last, then
// by CVE id.
const vulnOrder = ` ORDER BY COALESCE(c.cvss, m.cvss, -1) DESC, ov.cve_id DESC`

// vulnRiskOrder is the order of sort=risk: highest risk score first
// (vulns.CVEFacts.Risk: 5 × CVSS, or the middle of the NVD rating's range,
// + 30 × EPSS + 20 when in KEV), then by CVE id.
const vulnRiskOrder = ` ORDER BY (5 * COALESCE(c.cvss, m.cvss, CASE upper(c.severity) WHEN 'CRITICAL' THEN 9.5 WHEN 'HIGH' THEN 8.0
	WHEN 'MEDIUM' THEN 5.5 WHEN 'LOW' THEN 2.0 ELSE 0 END) + 30 * COALESCE(p.epss, 0) + CASE WHEN k.cve_id IS NULL THEN 0 ELSE 20 END) DESC,
	ov.cve_id DESC`

// order is the ORDER BY of q.
func (q VulnQuery) order() string {
	if q.Sort == "risk" {
		return vulnRiskOrder
	}
	return vulnOrder
}

// vulnWhere is the condition and arguments (after vulnFrom's) of q.
func vulnWhere(q VulnQuery) (string, []any) {
	args := []any{millis(q.Now), q.OrgID}
	where := `ov.org_id = ? AND ov.endpoints_count > 0`
	if q.MinCVSS != nil {
		where += ` AND COALESCE(c.cvss, m.cvss) >= ?`
		args = append(args, *q.MinCVSS)
	}
	if q.KEVOnly {
		where += ` AND k.cve_id IS NOT NULL`
	}
	if q.MinEPSS != nil {
		where += ` AND p.epss >= ?`
		args = append(args, *q.MinEPSS)
	}
	if q.CVEID != "" {
		where += ` AND ov.cve_id = ?`
		args = append(args, q.CVEID)
	}
	if !q.IncludeAccepted {
		where += ` AND x.cve_id IS NULL`
	}
	return where, args
}

// remediationOf is a CVE's display severity (the NVD's, else from its
// score) and remediation deadline under the policy (zero when it has none).
func remediationOf(cveID string, cvss *float64, nvdSeverity string, kev bool, due sql.NullInt64, first int64, policy vulns.Policy) (string, time.Time) {
	sev := vulns.DisplaySeverity(nvdSeverity)
	if sev == "" {
		sev = vulns.SeverityFromCVSS(cvss)
	}
	var k *feeds.KEV
	if kev && due.Valid {
		k = &feeds.KEV{CVEID: cveID, DueDate: fromMillis(due.Int64)}
	}
	return sev, vulns.Deadline(k, fromMillis(first), sev, policy)
}

// vulnStatuses answers, in the list's order, the CVEs q selects (paging
// aside) with their severity and remediation status at q.Now.
func (r *ReadTx) vulnStatuses(ctx context.Context, q VulnQuery, policy vulns.Policy) ([]vulnStatus, error) {
	where, args := vulnWhere(q)
	rows, err := r.query(ctx, `SELECT ov.cve_id, ov.first_detected_at, COALESCE(c.cvss, m.cvss), c.severity, k.cve_id IS NOT NULL, k.due_date`+
		vulnFrom+where+q.order(), args...)
	var out []vulnStatus
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var v vulnStatus
		var first int64
		var cvss sql.NullFloat64
		var severity sql.NullString
		var kev bool
		var due sql.NullInt64
		if err := row.Scan(&v.CVEID, &first, &cvss, &severity, &kev, &due); err != nil {
			return err
		}
		var score *float64
		if cvss.Valid {
			score = &cvss.Float64
		}
		var deadline time.Time
		v.Severity, deadline = remediationOf(v.CVEID, score, severity.String, kev, due, first, policy)
		v.Status = vulns.Status(deadline, q.Now)
		out = append(out, v)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: vulnerability statuses: %w", err)
	}
	return out, nil
}

// vulnStatus is one CVE of the fleet: its severity and remediation status.
type vulnStatus struct{ CVEID, Severity, Status string }

// ListVulnerabilities pages the CVEs present on the organization's fleet,
// highest CVSS first (unscored last), then by CVE id, with every field of
// the API's Vulnerability; the remediation status is evaluated at q.Now.
func (s *Store) ListVulnerabilities(ctx context.Context, q VulnQuery) ([]apiv1.Vulnerability, int, error) {
	out := make([]apiv1.Vulnerability, 0, min(q.Limit, 100))
	total := 0
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		policy, err := readPolicy(ctx, r.queryRow, q.OrgID)
		if err != nil {
			return err
		}
		where, args := vulnWhere(q)
		paging := ` LIMIT ? OFFSET ?`
		pageArgs := []any{q.Limit, q.Offset}
		if q.Remediation != "" {
			// The status depends on the organization's policy and the
			// time: the CVEs of that status are chosen here, and the page
			// is read by id.
			all, err := r.vulnStatuses(ctx, q, policy)
			if err != nil {
				return err
			}
			var ids []any
			for _, v := range all {
				if v.Status == q.Remediation {
					ids = append(ids, v.CVEID)
				}
			}
			total = len(ids)
			ids = ids[min(q.Offset, len(ids)):min(q.Offset+q.Limit, len(ids))]
			if len(ids) == 0 {
				return nil
			}
			where += ` AND ov.cve_id IN (` + placeholders(len(ids)) + `)`
			args = append(args, ids...)
			paging, pageArgs = "", nil
		} else if err := r.queryRow(ctx, `SELECT COUNT(*)`+vulnFrom+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("store: count vulnerabilities: %w", err)
		}
		rows, err := r.query(ctx, `SELECT ov.cve_id, ov.first_detected_at, COALESCE(c.cvss, m.cvss), c.severity,
			COALESCE(c.published, m.released), COALESCE(c.description, m.title),
			k.cve_id IS NOT NULL, k.due_date, COALESCE(k.ransomware, FALSE),
			x.kind, x.reason, x.expires_at, x.created_by, x.created_at, p.epss, p.percentile`+vulnFrom+where+q.order()+paging, append(args, pageArgs...)...)
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var v apiv1.Vulnerability
			var first int64
			var cvss sql.NullFloat64
			var severity, description sql.NullString
			var published, due sql.NullInt64
			var xKind, xReason, xBy sql.NullString
			var xExpires, xAt sql.NullInt64
			var epss, pct sql.NullFloat64
			if err := row.Scan(&v.CVEID, &first, &cvss, &severity, &published, &description, &v.CISAKEV, &due, &v.Ransomware,
				&xKind, &xReason, &xExpires, &xBy, &xAt, &epss, &pct); err != nil {
				return err
			}
			v.EPSS, v.EPSSPercentile = nullFloat(epss), nullFloat(pct)
			facts := vulns.CVEFacts{ID: v.CVEID, CVSS: nullFloat(cvss), NVDSeverity: severity.String, KEV: v.CISAKEV, EPSS: v.EPSS}
			v.RiskScore, v.RiskReason = facts.Risk(), facts.RiskReason()
			if cvss.Valid {
				score := cvss.Float64
				v.CVSSScore = &score
			}
			sev, d := remediationOf(v.CVEID, v.CVSSScore, severity.String, v.CISAKEV, due, first, policy)
			if sev != "" {
				v.Severity = &sev
			}
			v.PublishedAt = nullTime(published)
			v.Description = nullString(description)
			url := "https://nvd.nist.gov/vuln/detail/" + v.CVEID
			v.NVDURL = &url
			if !d.IsZero() {
				v.RemediationDeadline = &d
				status := vulns.Status(d, q.Now)
				v.RemediationStatus = &status
			}
			if xKind.Valid {
				v.RiskAccepted = &apiv1.RiskAcceptance{Kind: xKind.String, Reason: xReason.String, ExpiresAt: nullTime(xExpires),
					AcceptedBy: xBy.String, AcceptedAt: fromMillis(xAt.Int64)}
			}
			v.Software, v.Endpoints, v.RemediatedBy = []string{}, []apiv1.EndpointRef{}, []apiv1.Remediation{}
			out = append(out, v)
			return nil
		}); err != nil {
			return fmt.Errorf("store: list vulnerabilities: %w", err)
		}
		return r.fillAffected(ctx, q.OrgID, out)
	})
	return out, total, err
}

// fillAffected adds the affected products and endpoints of a page of CVEs.
func (r *ReadTx) fillAffected(ctx context.Context, orgID string, page []apiv1.Vulnerability) error {
	if len(page) == 0 {
		return nil
	}
	pos := make(map[string]int, len(page))
	ids := make([]string, len(page))
	for i, v := range page {
		pos[v.CVEID], ids[i] = i, v.CVEID
	}
	args := append([]any{orgID}, anySlice(ids)...)
	rows, err := r.query(ctx, `SELECT DISTINCT cve_id, software FROM endpoint_vulns WHERE org_id = ? AND cve_id IN (`+placeholders(len(ids))+`)
		ORDER BY cve_id, software`, args...)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var cve, sw string
		if err := row.Scan(&cve, &sw); err != nil {
			return err
		}
		page[pos[cve]].Software = append(page[pos[cve]].Software, sw)
		return nil
	}); err != nil {
		return fmt.Errorf("store: affected software: %w", err)
	}
	if err := r.fillRemediations(ctx, args, pos, page); err != nil {
		return err
	}
	rows, err = r.query(ctx, `SELECT DISTINCT ev.cve_id, e.id, COALESCE(e.display_name, e.hostname), e.sort_name FROM endpoint_vulns ev
		JOIN endpoints e ON e.id = ev.endpoint_id WHERE ev.org_id = ? AND ev.cve_id IN (`+placeholders(len(ids))+`)
		ORDER BY ev.cve_id, e.sort_name, e.id`, args...)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var cve, sortName string
		var ref apiv1.EndpointRef
		if err := row.Scan(&cve, &ref.ID, &ref.Name, &sortName); err != nil {
			return err
		}
		page[pos[cve]].Endpoints = append(page[pos[cve]].Endpoints, ref)
		return nil
	}); err != nil {
		return fmt.Errorf("store: affected endpoints: %w", err)
	}
	return nil
}

// Kinds of vulnerability exceptions.
const (
	ExceptionAccepted            = "accepted"
	ExceptionCompensatingControl = "compensating_control"
)

// VulnException is an accepted risk or a compensating control for a CVE.
type VulnException struct {
	ID        string     `json:"id"`
	OrgID     string     `json:"orgId"`
	CVEID     string     `json:"cveId"`
	Kind      string     `json:"kind"`
	Reason    string     `json:"reason"`
	ExpiresAt *time.Time `json:"expiresAt"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	// Active is false once the exception has expired.
	Active bool `json:"active"`
	// Endpoints is how many endpoints of the organization have the CVE now.
	Endpoints int `json:"endpoints"`
}

// SetVulnException records (or replaces) the organization's exception for
// a CVE, audited.
func (s *Store) SetVulnException(ctx context.Context, e *AuditEntry, x *VulnException) error {
	if x.ID == "" {
		x.ID = NewID()
	}
	e.TargetType, e.TargetID = "vulnerability", x.CVEID
	e.Summary = map[string]any{"kind": x.Kind, "reason": x.Reason, "expiresAt": x.ExpiresAt}
	return s.Audited(ctx, e, func(tx *Tx) error {
		err := tx.queryRow(ctx, `INSERT INTO vuln_exceptions (id, org_id, cve_id, kind, reason, expires_at, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (org_id, cve_id) DO UPDATE SET kind = excluded.kind, reason = excluded.reason, expires_at = excluded.expires_at,
			created_by = excluded.created_by, created_at = excluded.created_at RETURNING id`,
			x.ID, x.OrgID, x.CVEID, x.Kind, x.Reason, nullMillis(x.ExpiresAt), x.CreatedBy, millis(x.CreatedAt)).Scan(&x.ID)
		if err != nil {
			return fmt.Errorf("store: vulnerability exception: %w", err)
		}
		return nil
	})
}

// RevokeVulnException deletes the organization's exception for a CVE,
// audited; dberr.ErrNotFound when there is none.
func (s *Store) RevokeVulnException(ctx context.Context, e *AuditEntry, orgID, cveID string) error {
	e.TargetType, e.TargetID = "vulnerability", cveID
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM vuln_exceptions WHERE org_id = ? AND cve_id = ?`, orgID, cveID)
		if err != nil {
			return fmt.Errorf("store: revoke vulnerability exception: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: exception for %s: %w", cveID, dberr.ErrNotFound)
		}
		return nil
	})
}

// ListVulnExceptions answers the organization's exceptions (kind "" for
// both kinds), expired ones included with Active false; the source of the
// compensating-controls report.
func (s *Store) ListVulnExceptions(ctx context.Context, orgID, kind string, now time.Time) ([]VulnException, error) {
	q := `SELECT x.id, x.cve_id, x.kind, x.reason, x.expires_at, x.created_by, x.created_at, COALESCE(ov.endpoints_count, 0)
		FROM vuln_exceptions x LEFT JOIN org_vulns ov ON ov.org_id = x.org_id AND ov.cve_id = x.cve_id WHERE x.org_id = ?`
	args := []any{orgID}
	if kind != "" {
		q += ` AND x.kind = ?`
		args = append(args, kind)
	}
	rows, err := s.query(ctx, q+` ORDER BY x.cve_id`, args...)
	out := []VulnException{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		x := VulnException{OrgID: orgID}
		var expires sql.NullInt64
		var created int64
		if err := r.Scan(&x.ID, &x.CVEID, &x.Kind, &x.Reason, &expires, &x.CreatedBy, &created, &x.Endpoints); err != nil {
			return err
		}
		x.ExpiresAt, x.CreatedAt = nullTime(expires), fromMillis(created)
		x.Active = x.ExpiresAt == nil || x.ExpiresAt.After(now)
		out = append(out, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: vulnerability exceptions: %w", err)
	}
	return out, nil
}

// VulnPolicy answers the organization's remediation periods (the defaults
// when none was set).
func (s *Store) VulnPolicy(ctx context.Context, orgID string) (vulns.Policy, error) {
	return readPolicy(ctx, s.queryRow, orgID)
}

func readPolicy(ctx context.Context, queryRow func(ctx context.Context, q string, args ...any) *sql.Row, orgID string) (vulns.Policy, error) {
	var c, h, m, l int
	err := queryRow(ctx, `SELECT critical_days, high_days, medium_days, low_days FROM vuln_policies WHERE org_id = ?`, orgID).Scan(&c, &h, &m, &l)
	if errors.Is(err, sql.ErrNoRows) {
		return vulns.DefaultPolicy(), nil
	}
	if err != nil {
		return vulns.Policy{}, fmt.Errorf("store: remediation policy: %w", err)
	}
	const day = 24 * time.Hour
	return vulns.Policy{Critical: time.Duration(c) * day, High: time.Duration(h) * day, Medium: time.Duration(m) * day, Low: time.Duration(l) * day}, nil
}

// SetVulnPolicy stores the organization's remediation periods (whole days),
// audited.
func (s *Store) SetVulnPolicy(ctx context.Context, e *AuditEntry, orgID string, p vulns.Policy) error {
	days := func(d time.Duration) int { return int(d / (24 * time.Hour)) }
	e.TargetType, e.TargetID = "vulnerability-policy", orgID
	e.Summary = map[string]any{"criticalDays": days(p.Critical), "highDays": days(p.High), "mediumDays": days(p.Medium), "lowDays": days(p.Low)}
	return s.Audited(ctx, e, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `INSERT INTO vuln_policies (org_id, critical_days, high_days, medium_days, low_days) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (org_id) DO UPDATE SET critical_days = excluded.critical_days, high_days = excluded.high_days,
			medium_days = excluded.medium_days, low_days = excluded.low_days`,
			orgID, days(p.Critical), days(p.High), days(p.Medium), days(p.Low)); err != nil {
			return fmt.Errorf("store: remediation policy: %w", err)
		}
		return nil
	})
}

// isKB reports whether a finding's source is a Microsoft KB ("KB5071417",
// the MSRC fix of a Windows finding).
func isKB(source string) bool {
	if len(source) < 3 || !strings.HasPrefix(source, "KB") {
		return false
	}
	for _, c := range source[2:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fillRemediations adds to a page of CVEs the updates that fix them on the
// organization's endpoints (Vulnerability.remediatedBy): the KB of Windows
// findings, the fixed version of Linux packages and applications. Findings
// with no known fix add nothing.
func (r *ReadTx) fillRemediations(ctx context.Context, args []any, pos map[string]int, page []apiv1.Vulnerability) error {
	ids := args[1:]
	rows, err := r.query(ctx, `SELECT ev.cve_id, ev.software, ev.source, COALESCE(ev.fixed_in, ''), e.platform, COUNT(DISTINCT ev.endpoint_id)
		FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id
		WHERE ev.org_id = ? AND ev.cve_id IN (`+placeholders(len(ids))+`)
		GROUP BY ev.cve_id, ev.software, ev.source, ev.fixed_in, e.platform`, args...)
	type key struct{ cve, kind, key, software, fixedIn string }
	counts := map[key]int{}
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var cve, software, source, fixedIn, platform string
		var n int
		if err := row.Scan(&cve, &software, &source, &fixedIn, &platform, &n); err != nil {
			return err
		}
		k := key{cve: cve, software: software, fixedIn: fixedIn}
		switch {
		case isKB(source):
			k.kind, k.key = "kb", source
		case fixedIn == "":
			return nil
		case platform == "linux":
			k.kind, k.key = "package", software
		default:
			k.kind, k.key = "application", software
		}
		counts[k] += n
		return nil
	}); err != nil {
		return fmt.Errorf("store: remediations: %w", err)
	}
	for k, n := range counts {
		rem := apiv1.Remediation{Kind: k.kind, Key: k.key, Software: k.software, Endpoints: n}
		if k.fixedIn != "" {
			f := k.fixedIn
			rem.FixedIn = &f
		}
		v := &page[pos[k.cve]]
		v.RemediatedBy = append(v.RemediatedBy, rem)
	}
	for i := range page {
		slices.SortFunc(page[i].RemediatedBy, func(a, b apiv1.Remediation) int {
			if a.Endpoints != b.Endpoints {
				return b.Endpoints - a.Endpoints
			}
			if c := strings.Compare(a.Key, b.Key); c != 0 {
				return c
			}
			if c := strings.Compare(a.Software, b.Software); c != 0 {
				return c
			}
			var af, bf string
			if a.FixedIn != nil {
				af = *a.FixedIn
			}
			if b.FixedIn != nil {
				bf = *b.FixedIn
			}
			return strings.Compare(af, bf)
		})
	}
	return nil
}
