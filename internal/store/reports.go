package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/vulns"
)

// ReportRow is one row of a SQL report source: its values in the report's
// column order, and when the data behind it was collected (zero if unknown).
type ReportRow struct {
	Values []any
	At     time.Time
}

// ReportParams are the inputs of a SQL report source.
type ReportParams struct {
	OrgID string
	Now   time.Time
	// ConnectedSince: an endpoint seen at or after it, and not stopped
	// since, is connected (seenConnected).
	ConnectedSince time.Time
	// Arg narrows some sources: the run action type of "commands", the
	// filter of "updates" ("critical", "third-party"), the CVE id of
	// "cve-status", "critical" for "vuln-findings".
	Arg string
	// Patterns keep only software whose lowercase name contains one of them
	// ("software", "software-by-endpoint", "software-currency",
	// "cve-status").
	Patterns []string
	// Exclude drops software whose lowercase name contains one of these.
	Exclude []string
	// Offset skips the first rows; Limit, when above 0, stops after that
	// many rows (ReportCount counts every row regardless).
	Offset, Limit int
	// ReuseValues lets ReportRows yield the same Values slice for every
	// row: the caller must not keep a row once it asked for the next.
	ReuseValues bool

	// sqlite is set by the store when the query runs on SQLite.
	sqlite bool
}

// Kinds of report columns: how a database value becomes a report value.
type colKind uint8

const (
	kText  colKind = iota // string or null
	kInt                  // integer or null
	kFloat                // number rounded to 2 decimals, or null
	kBool                 // boolean (SQLite answers 0/1)
	kTime                 // Unix ms → RFC 3339 string, or null
	kList                 // JSON array of strings → "a, b"
)

// reportSQL is a SQL source: the query's columns are the report's values
// in order (of the given kinds), followed by one nullable Unix-ms column,
// the collection time of the data behind the row.
type reportSQL struct {
	kinds []colKind
	query func(p ReportParams) (string, []any)
	// fix, when set, adjusts a row after conversion.
	fix func(v []any)
	// endpointAt, when above 0, is 1 + the index of the Endpoint (name)
	// column. The query then answers neither that column nor the
	// collection time, only the endpoint id after where the name goes:
	// ReportRows reads the organization's endpoints once and fills the
	// name and the endpoint's inventory time in, instead of a join looked
	// up on every row.
	endpointAt int
	// titleAt, when above 0, is 1 + the index of a software title (name)
	// column: the query answers the title's id there (an integer, where a
	// name is a string the driver allocates on every row) and ReportRows
	// fills the name in from the organization's titles, read once.
	titleAt int
	// updateAt, when above 0, is 1 + the index of an "Update Available"
	// column of a findings report: the query answers NULL there, and,
	// after the collection time, the finding's endpoint id, CVE, software
	// and source; ReportRows fills in the endpoint's missing update that
	// fixes the finding as Update.cves pairs them (findingFixes).
	updateAt int
	// direct, when set, answers the rows without the query when it can
	// for p (ok false: use the query).
	direct func(s *Store, ctx context.Context, p ReportParams) (rows iter.Seq2[ReportRow, error], ok bool)
}

const endpointName = `COALESCE(e.display_name, e.hostname), e.id`

// connected is the endpoint status column; it takes ConnectedSince.
const connected = `CASE WHEN ` + seenConnected + ` THEN 'connected' ELSE 'disconnected' END`

// likeAny is the condition that column contains one of n patterns.
func likeAny(column string, patterns []string) (string, []any) {
	if len(patterns) == 0 {
		return "", nil
	}
	conds := make([]string, len(patterns))
	args := make([]any, len(patterns))
	for i, p := range patterns {
		conds[i] = column + ` LIKE ? ESCAPE '\'`
		args[i] = likePattern(p)
	}
	return ` AND (` + strings.Join(conds, " OR ") + `)`, args
}

// softwareFilter is the condition on t.name_lower of p's patterns.
func softwareFilter(p ReportParams) (string, []any) {
	cond, args := likeAny("t.name_lower", p.Patterns)
	for _, x := range p.Exclude {
		cond += ` AND t.name_lower NOT LIKE ? ESCAPE '\'`
		args = append(args, likePattern(x))
	}
	return cond, args
}

// severityFix derives the display severity of a finding row whose value at
// index sev is the feed's severity and at cvss its score.
func severityFix(sev, cvss int) func(v []any) {
	return func(v []any) {
		s, _ := v[sev].(string)
		if d := vulns.DisplaySeverity(s); d != "" {
			v[sev] = d
			return
		}
		if f, ok := v[cvss].(float64); ok {
			v[sev] = vulns.SeverityFromCVSS(&f)
		} else {
			v[sev] = nil
		}
	}
}

var reportSources = map[string]reportSQL{
	"endpoints": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kText, kText, kList, kText, kText, kText, kTime, kTime},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.hostname, e.platform, e.os, e.os_version, e.type, e.domain, e.ip_addresses,
				e.logged_user, ` + connected + `, e.agent_version, p.last_seen_at, e.enrolled_at, e.inventory_at
				FROM ` + endpointsSeen + ` WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, []any{millis(p.ConnectedSince), p.OrgID}
		},
	},
	"hardware": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kInt, kFloat, kFloat, kText, kText},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.manufacturer, e.model, e.serial_number, e.cpu, e.cores, e.ram_gb,
				(SELECT SUM(d.size_gb) FROM endpoint_disks d WHERE d.endpoint_id = e.id), e.platform, e.type, e.inventory_at
				FROM endpoints e WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, []any{p.OrgID}
		},
	},
	"antivirus": {
		kinds: []colKind{kText, kText, kText, kText, kText, kBool, kText, kTime},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.platform, e.os, e.antivirus, e.antivirus IS NOT NULL, ` + connected + `, p.last_seen_at, e.inventory_at
				FROM ` + endpointsSeen + ` WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, []any{millis(p.ConnectedSince), p.OrgID}
		},
	},
	"offline": {
		kinds: []colKind{kText, kText, kText, kText, kText, kList, kTime, kInt},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.platform, e.os, e.logged_user, e.ip_addresses, p.last_seen_at,
				(? - COALESCE(p.last_seen_at, e.enrolled_at)) / 86400000, e.inventory_at
				FROM ` + endpointsSeen + ` WHERE e.org_id = ? AND ` + seenDisconnected + ` ORDER BY e.sort_name, e.id`,
				[]any{millis(p.Now), p.OrgID, millis(p.ConnectedSince)}
		},
	},
	"ad-domains": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kText},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.domain, e.ad_ou, e.platform, e.os, e.type, e.inventory_at
				FROM endpoints e WHERE e.org_id = ? ORDER BY COALESCE(e.domain, ''), e.sort_name, e.id`, []any{p.OrgID}
		},
	},
	"agents": {
		kinds: []colKind{kText, kText, kText, kText, kText, kTime, kTime, kTime, kBool, kBool},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.platform, e.agent_version, ` + connected + `, p.last_seen_at, e.inventory_at, e.enrolled_at,
				e.pending_reboot, e.insecure_channel, e.inventory_at FROM ` + endpointsSeen + ` WHERE e.org_id = ? ORDER BY e.sort_name, e.id`,
				[]any{millis(p.ConnectedSince), p.OrgID}
		},
	},
	"hw-manufacturers": {
		kinds: []colKind{kText, kText, kInt, kInt, kInt},
		query: func(p ReportParams) (string, []any) {
			return `SELECT COALESCE(e.manufacturer, 'Unknown'), COALESCE(e.model, 'Unknown'), COUNT(*),
				SUM(CASE WHEN e.type = 'workstation' THEN 1 ELSE 0 END), SUM(CASE WHEN e.type = 'server' THEN 1 ELSE 0 END), MAX(e.inventory_at)
				FROM endpoints e WHERE e.org_id = ? GROUP BY COALESCE(e.manufacturer, 'Unknown'), COALESCE(e.model, 'Unknown')
				ORDER BY COUNT(*) DESC, 1, 2`, []any{p.OrgID}
		},
	},
	"disks": {
		kinds: []colKind{kText, kText, kText, kFloat, kFloat, kFloat},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, d.drive, d.size_gb, d.free_gb,
				CASE WHEN d.size_gb > 0 THEN 100.0 * d.free_gb / d.size_gb END, e.inventory_at
				FROM endpoint_disks d JOIN endpoints e ON e.id = d.endpoint_id WHERE e.org_id = ? ORDER BY e.sort_name, e.id, d.pos`, []any{p.OrgID}
		},
	},
	"disks-summary": {
		kinds: []colKind{kText, kText, kText, kInt, kFloat, kFloat, kFloat},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.platform, COUNT(d.drive), SUM(d.size_gb), SUM(d.free_gb),
				CASE WHEN SUM(d.size_gb) > 0 THEN 100.0 * SUM(d.free_gb) / SUM(d.size_gb) END, e.inventory_at
				FROM endpoints e LEFT JOIN endpoint_disks d ON d.endpoint_id = e.id WHERE e.org_id = ?
				GROUP BY e.id ORDER BY e.sort_name, e.id`, []any{p.OrgID}
		},
	},
	// software: one row per application × endpoint, by application, then by
	// endpoint id (enrollment order): the order of the software index, which
	// holds every column shown (see migration 008), so the rows stream from
	// the index alone, without a sort or a lookup of the table per row. The
	// whole report on SQLite is read a title at a time (installedSoftware).
	"software": {
		kinds:      []colKind{kText, kText, kText, kText, kText, kText, kText, kText},
		endpointAt: 1 + 3,
		titleAt:    1 + 0,
		query: func(p ReportParams) (string, []any) {
			cond, args := softwareFilter(p)
			return `SELECT es.title_id, NULLIF(es.version_key, ''), es.publisher, es.endpoint_id, es.install_date, es.installed_for, es.install_type
				FROM software_titles t JOIN endpoint_software es ON es.title_id = t.id
				WHERE t.org_id = ? AND t.installs > 0` + cond + ` ORDER BY t.name_lower, t.id, es.endpoint_id, es.version_key`,
				append([]any{p.OrgID}, args...)
		},
		direct: func(s *Store, ctx context.Context, p ReportParams) (iter.Seq2[ReportRow, error], bool) {
			if !p.sqlite || p.Limit > 0 || p.Offset > 0 {
				return nil, false
			}
			return s.installedSoftware(ctx, p), true
		},
	},
	// software-by-endpoint: one row per endpoint × application, by endpoint
	// name, then application name. The whole report without a filter on
	// SQLite is read an endpoint at a time, its applications sorted in
	// memory (softwareByEndpoint).
	"software-by-endpoint": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kText, kText},
		query: func(p ReportParams) (string, []any) {
			cond, args := softwareFilter(p)
			// Without a filter, SQLite must walk the endpoints in order
			// and each one's software by primary key (a page is then
			// found at once); left to itself it prefers the covering title
			// index and sorts every row. The unary + keeps it off that
			// index. A filter keeps the title index: few titles match.
			title := `es.title_id`
			if p.sqlite && cond == "" {
				title = `+es.title_id`
			}
			return `SELECT ` + endpointName + `, t.name, NULLIF(es.version_key, ''), es.publisher, es.install_date, es.installed_for, es.install_type, e.inventory_at
				FROM endpoints e JOIN endpoint_software es ON es.endpoint_id = e.id JOIN software_titles t ON t.id = ` + title + `
				WHERE e.org_id = ?` + cond + ` ORDER BY e.sort_name, e.id, t.name_lower, es.version_key, t.id`,
				append([]any{p.OrgID}, args...)
		},
		direct: func(s *Store, ctx context.Context, p ReportParams) (iter.Seq2[ReportRow, error], bool) {
			if !p.sqlite || len(p.Patterns) > 0 || len(p.Exclude) > 0 || p.Limit > 0 || p.Offset > 0 {
				return nil, false
			}
			return s.softwareByEndpoint(ctx, p), true
		},
	},
	// software-currency: the applications and the newer version the
	// endpoint's missing third-party updates offer for them.
	"software-currency": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kBool},
		query: func(p ReportParams) (string, []any) {
			cond, args := softwareFilter(p)
			return `SELECT ` + endpointName + `, t.name, NULLIF(es.version_key, ''), es.publisher,
				(SELECT MAX(u.latest_version) FROM endpoint_updates u WHERE u.endpoint_id = es.endpoint_id AND u.source = 'Applications'
					AND lower(u.title) = t.name_lower),
				NOT EXISTS (SELECT 1 FROM endpoint_updates u WHERE u.endpoint_id = es.endpoint_id AND u.source = 'Applications'
					AND lower(u.title) = t.name_lower), e.inventory_at
				FROM endpoints e JOIN endpoint_software es ON es.endpoint_id = e.id JOIN software_titles t ON t.id = es.title_id
				WHERE e.org_id = ?` + cond + ` ORDER BY e.sort_name, e.id, t.name_lower, es.version_key`,
				append([]any{p.OrgID}, args...)
		},
	},
	// updates: missing updates, one row per endpoint × update.
	"updates": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kText, kText, kBool, kTime, kTime, kText},
		query: func(p ReportParams) (string, []any) {
			const columns = `SELECT ` + endpointName + `, eu.title, eu.kb, k.severity, k.source, eu.installed_version, eu.latest_version,
				eu.reboot_required, eu.release_date, eu.detected_at, COALESCE(a.status, 'NEW'), e.inventory_at`
			const order = ` ORDER BY e.sort_name, e.id, k.severity, eu.title`
			cond := ""
			switch p.Arg {
			case "critical":
				cond = ` AND k.severity = 'Critical'`
			case "third-party":
				cond = ` AND k.source = 'Applications'`
			default:
				return columns + ` FROM endpoints e JOIN endpoint_updates eu ON eu.endpoint_id = e.id
					JOIN update_keys k ON k.org_id = eu.org_id AND k.key = eu.key
					LEFT JOIN update_approvals a ON a.org_id = eu.org_id AND a.key = eu.key
					WHERE e.org_id = ?` + order, []any{p.OrgID}
			}
			// A filter on the key keeps a few of the keys: start from them
			// and their rows (index on org_id, key) and sort what is found,
			// rather than walk every endpoint's updates in name order, which
			// SQLite prefers to avoid the sort (much slower on a large
			// fleet). CROSS JOIN fixes SQLite's join order; PostgreSQL
			// plans it as a plain join.
			return columns + ` FROM update_keys k CROSS JOIN endpoint_updates eu CROSS JOIN endpoints e
				LEFT JOIN update_approvals a ON a.org_id = eu.org_id AND a.key = eu.key
				WHERE k.org_id = ?` + cond + ` AND eu.org_id = k.org_id AND eu.key = k.key AND e.id = eu.endpoint_id` + order, []any{p.OrgID}
		},
	},
	// update-counts: per endpoint, the missing updates by kind.
	"update-counts": {
		kinds: []colKind{kText, kText, kText, kText, kInt, kInt, kInt, kInt, kInt, kBool, kBool, kTime},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ` + endpointName + `, e.platform, e.os, COUNT(eu.id),
				SUM(CASE WHEN eu.derived_severity = 'Critical' THEN 1 ELSE 0 END), SUM(CASE WHEN eu.derived_severity = 'Important' THEN 1 ELSE 0 END),
				SUM(CASE WHEN eu.source <> 'Applications' THEN 1 ELSE 0 END), SUM(CASE WHEN eu.source = 'Applications' THEN 1 ELSE 0 END),
				COALESCE(MAX(CASE WHEN eu.reboot_required THEN 1 ELSE 0 END), 0) = 1, e.pending_reboot, p.last_seen_at, e.inventory_at
				FROM ` + endpointsSeen + ` LEFT JOIN endpoint_updates eu ON eu.endpoint_id = e.id WHERE e.org_id = ?
				GROUP BY e.id, p.last_seen_at ORDER BY e.sort_name, e.id`, []any{p.OrgID}
		},
	},
	// commands: run history of one action type, newest first.
	"commands": {
		kinds: []colKind{kText, kText, kText, kText, kText, kTime, kTime, kTime, kInt, kText, kText},
		query: func(p ReportParams) (string, []any) {
			return `SELECT COALESCE(e.display_name, e.hostname, c.endpoint_name), c.endpoint_id, r.name, c.status, r.created_by,
				c.created_at, c.started_at, c.finished_at, c.exit_code, r.id, c.result, COALESCE(c.finished_at, c.started_at, c.created_at)
				FROM commands c JOIN runs r ON r.id = c.run_id LEFT JOIN endpoints e ON e.id = c.endpoint_id
				WHERE r.org_id = ? AND r.action_type = ? ORDER BY c.created_at DESC, c.id`, []any{p.OrgID, p.Arg}
		},
		fix: func(v []any) {
			// The result's first line says what happened; the log stays in the run.
			if s, ok := v[10].(string); ok {
				s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
				v[10] = s
			}
		},
	},
	"deploy-statistics": {
		kinds: []colKind{kText, kText, kInt, kInt, kInt, kInt, kInt, kTime, kFloat},
		query: func(p ReportParams) (string, []any) {
			return `SELECT COALESCE(MAX(e.display_name), MAX(e.hostname), MAX(c.endpoint_name)), c.endpoint_id, COUNT(*),
				SUM(CASE WHEN c.status = 'SUCCESS' THEN 1 ELSE 0 END), SUM(CASE WHEN c.status = 'FAILED' THEN 1 ELSE 0 END),
				SUM(CASE WHEN c.status = 'CANCELLED' THEN 1 ELSE 0 END), SUM(CASE WHEN c.status IN ('PENDING', 'RUNNING') THEN 1 ELSE 0 END),
				MAX(c.created_at),
				CASE WHEN SUM(CASE WHEN c.status IN ('SUCCESS', 'FAILED') THEN 1 ELSE 0 END) > 0
					THEN 100.0 * SUM(CASE WHEN c.status = 'SUCCESS' THEN 1 ELSE 0 END) / SUM(CASE WHEN c.status IN ('SUCCESS', 'FAILED') THEN 1 ELSE 0 END) END,
				MAX(COALESCE(c.finished_at, c.started_at, c.created_at))
				FROM commands c JOIN runs r ON r.id = c.run_id LEFT JOIN endpoints e ON e.id = c.endpoint_id
				WHERE r.org_id = ? AND r.action_type = 'DEPLOY_UPDATES' GROUP BY c.endpoint_id
				ORDER BY 1, 2`, []any{p.OrgID}
		},
	},
	// vuln-findings: one row per endpoint × CVE × product.
	"vuln-findings": {
		kinds: []colKind{kText, kText, kText, kText, kFloat, kBool, kText, kText, kText, kTime, kText},
		query: func(p ReportParams) (string, []any) {
			cond := ""
			if p.Arg == "critical" {
				cond = ` AND (upper(c.severity) = 'CRITICAL' OR (c.severity IS NULL AND c.cvss >= 9))`
			}
			// Update Available: filled in by ReportRows (updateAt) from
			// the endpoint id, CVE, software and source after the
			// collection time.
			return `SELECT ` + endpointName + `, ev.cve_id, c.severity, c.cvss, k.cve_id IS NOT NULL, ev.software, ev.version, ev.fixed_in,
				ev.first_seen_at, NULL, e.inventory_at, ev.endpoint_id, ev.cve_id, ev.software, ev.source
				FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id LEFT JOIN vuln_cves c ON c.id = ev.cve_id
				LEFT JOIN vuln_kev k ON k.cve_id = ev.cve_id
				WHERE ev.org_id = ?` + cond + ` ORDER BY e.sort_name, e.id, COALESCE(c.cvss, -1) DESC, ev.cve_id, ev.software`, []any{p.OrgID}
		},
		fix:      severityFix(3, 4),
		updateAt: 11,
	},
	"compliance-days": {
		kinds: []colKind{kText, kInt, kInt, kFloat, kInt, kInt, kInt, kInt},
		query: func(p ReportParams) (string, []any) {
			return `SELECT day, endpoints, fully_patched, CASE WHEN endpoints > 0 THEN 100.0 * fully_patched / endpoints END,
				missing_critical, missing_other, critical_cves, overdue_cves, recorded_at
				FROM compliance_days WHERE org_id = ? ORDER BY day`, []any{p.OrgID}
		},
	},
	"vulnerable-software": {
		kinds: []colKind{kText, kText, kInt, kInt, kFloat, kInt, kText},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ev.software, ev.version, COUNT(DISTINCT ev.cve_id), COUNT(DISTINCT ev.endpoint_id), MAX(c.cvss),
				COUNT(DISTINCT k.cve_id), MAX(ev.fixed_in), MAX(e.inventory_at)
				FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id LEFT JOIN vuln_cves c ON c.id = ev.cve_id
				LEFT JOIN vuln_kev k ON k.cve_id = ev.cve_id
				WHERE ev.org_id = ? GROUP BY ev.software, ev.version ORDER BY MAX(COALESCE(c.cvss, -1)) DESC, ev.software, ev.version`, []any{p.OrgID}
		},
	},
	"cisa-kev": {
		kinds: []colKind{kText, kText, kText, kText, kFloat, kTime, kTime, kBool, kInt},
		query: func(p ReportParams) (string, []any) {
			return `SELECT ov.cve_id, k.vendor_project, k.product, k.name, c.cvss, k.date_added, k.due_date, k.ransomware, ov.endpoints_count,
				ov.last_detected_at
				FROM org_vulns ov JOIN vuln_kev k ON k.cve_id = ov.cve_id LEFT JOIN vuln_cves c ON c.id = ov.cve_id
				WHERE ov.org_id = ? AND ov.endpoints_count > 0 ORDER BY k.due_date DESC, ov.cve_id`, []any{p.OrgID}
		},
	},
	// cve-status: the endpoints a CVE affects, then those where the product
	// it is found in was checked and is not affected.
	"cve-status": {
		kinds: []colKind{kText, kText, kText, kText, kText, kText, kText, kTime},
		query: func(p ReportParams) (string, []any) {
			cond, args := likeAny("t.name_lower", p.Patterns)
			if cond == "" {
				cond = ` AND FALSE`
			}
			q := `SELECT ` + endpointName + `, e.platform, ev.software, ev.version, ev.fixed_in, 'Vulnerable', ev.first_seen_at, e.inventory_at, e.sort_name
				FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id WHERE ev.org_id = ? AND ev.cve_id = ?
				UNION ALL
				SELECT ` + endpointName + `, e.platform, t.name, NULLIF(es.version_key, ''), NULL, 'Not vulnerable', NULL, e.inventory_at, e.sort_name
				FROM endpoints e JOIN endpoint_software es ON es.endpoint_id = e.id JOIN software_titles t ON t.id = es.title_id
				WHERE e.org_id = ?` + cond + ` AND NOT EXISTS (SELECT 1 FROM endpoint_vulns x WHERE x.endpoint_id = e.id AND x.cve_id = ?)
				ORDER BY 10, 2, 4`
			a := []any{p.OrgID, p.Arg, p.OrgID}
			a = append(a, args...)
			return q, append(a, p.Arg)
		},
	},
}

// HasReportSource tells whether name is a SQL report source.
func HasReportSource(name string) bool {
	_, ok := reportSources[name]
	return ok
}

// ReportColumns is the number of values the SQL report source yields.
func ReportColumns(name string) int { return len(reportSources[name].kinds) }

// ReportRows streams the rows of the named SQL report source, in one query,
// one row in memory at a time. Each column is scanned into a holder of its
// kind (no driver value boxed per column).
func (s *Store) ReportRows(ctx context.Context, source string, p ReportParams) iter.Seq2[ReportRow, error] {
	src, ok := reportSources[source]
	if !ok {
		return func(yield func(ReportRow, error) bool) {
			yield(ReportRow{}, fmt.Errorf("store: no report source %q", source))
		}
	}
	p.sqlite = s.engine == SQLite
	if src.direct != nil {
		if rows, ok := src.direct(s, ctx, p); ok {
			return rows
		}
	}
	return func(yield func(ReportRow, error) bool) {
		fail := func(err error) {
			yield(ReportRow{}, fmt.Errorf("store: report %s: %w", source, err))
		}
		q, args := src.query(p)
		if p.Limit > 0 || p.Offset > 0 {
			limit := int64(math.MaxInt64)
			if p.Limit > 0 {
				limit = int64(p.Limit)
			}
			q += ` LIMIT ? OFFSET ?`
			args = append(args, limit, p.Offset)
		}
		// The lookups first: a query of the read pool must not wait for
		// a connection the open rows below hold.
		var endpoints map[string]reportEndpoint
		var titles map[int64]string
		var err error
		if src.endpointAt > 0 {
			if endpoints, err = s.reportEndpointNames(ctx, p.OrgID); err != nil {
				fail(err)
				return
			}
		}
		if src.titleAt > 0 {
			if titles, err = s.reportTitleNames(ctx, p.OrgID); err != nil {
				fail(err)
				return
			}
		}
		var fixes findingFixes
		if src.updateAt > 0 {
			if fixes, err = s.findingFixes(ctx, p.OrgID); err != nil {
				fail(err)
				return
			}
		}
		rows, err := s.query(ctx, q, args...)
		if err != nil {
			fail(err)
			return
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			fail(err)
			return
		}
		// The values, the collection time, then any columns the query
		// only sorts by (read as text and ignored). With endpointAt, the
		// query has neither the name nor the time column: at[i] is the
		// query column of value i, -1 for the endpoint name.
		n := len(src.kinds)
		name, title := src.endpointAt-1, src.titleAt-1
		at := make([]int, n)
		kinds := make([]colKind, 0, n)
		for i, k := range src.kinds {
			switch {
			case i == name:
				at[i] = -1
				continue
			case i == title:
				k = kInt
			}
			at[i] = len(kinds)
			kinds = append(kinds, k)
		}
		cells := make([]reportCell, max(len(cols), len(kinds)+1))
		ptrs := make([]any, len(cells))
		for i := range cells {
			switch {
			case i < len(kinds):
				cells[i].kind = kinds[i]
			case i == len(kinds):
				cells[i].kind = kInt
			default:
				cells[i].kind = kText
			}
			ptrs[i] = &cells[i]
		}
		ptrs = ptrs[:len(cols)]
		var values []any
		if err := eachRow(rows, nil, func(row *sql.Rows) error {
			if err := row.Scan(ptrs...); err != nil {
				return err
			}
			if values == nil || !p.ReuseValues {
				values = make([]any, n)
			}
			r := ReportRow{Values: values}
			for i, c := range at {
				switch {
				case c < 0:
				case i == title:
					r.Values[i] = titles[cells[c].i]
				default:
					var err error
					if r.Values[i], err = cells[c].value(); err != nil {
						return fmt.Errorf("column %d: %w", i, err)
					}
				}
			}
			if name >= 0 {
				e := endpoints[cells[at[name+1]].s]
				r.Values[name], r.At = e.name, e.at
			} else if c := cells[len(kinds)]; c.valid {
				r.At = fromMillis(c.i)
			}
			if src.updateAt > 0 {
				// endpoint id, CVE, software, source after the time.
				x := cells[len(kinds)+1:]
				if key := fixes.update(x[0].s, x[1].s, x[2].s, x[3].s); key != "" {
					r.Values[src.updateAt-1] = key
				}
			}
			if src.fix != nil {
				src.fix(r.Values)
			}
			if !yield(r, nil) {
				return errStopRows
			}
			return nil
		}); err != nil {
			fail(err)
		}
	}
}

// reportEndpoint is what a report row shows of its endpoint.
type reportEndpoint struct {
	name string
	at   time.Time
}

// reportEndpointNames maps the organization's endpoint ids to their names
// and inventory times.
func (s *Store) reportEndpointNames(ctx context.Context, orgID string) (map[string]reportEndpoint, error) {
	rows, err := s.query(ctx, `SELECT id, COALESCE(display_name, hostname), inventory_at FROM endpoints WHERE org_id = ?`, orgID)
	out := map[string]reportEndpoint{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, name string
		var at *int64
		if err := r.Scan(&id, &name, &at); err != nil {
			return err
		}
		e := reportEndpoint{name: name}
		if at != nil {
			e.at = fromMillis(*at)
		}
		out[id] = e
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// reportTitleNames maps the organization's software title ids to their
// names.
func (s *Store) reportTitleNames(ctx context.Context, orgID string) (map[int64]string, error) {
	rows, err := s.query(ctx, `SELECT id, name FROM software_titles WHERE org_id = ?`, orgID)
	out := map[int64]string{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id int64
		var name string
		if err := r.Scan(&id, &name); err != nil {
			return err
		}
		out[id] = name
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// ReportCount counts the rows of the named SQL report source for p (Limit
// and Offset aside): the total of a page.
func (s *Store) ReportCount(ctx context.Context, source string, p ReportParams) (int, error) {
	src, ok := reportSources[source]
	if !ok {
		return 0, fmt.Errorf("store: no report source %q", source)
	}
	p.sqlite = s.engine == SQLite
	q, args := src.query(p)
	// The order does not change the count, and SQLite would otherwise
	// follow it (walking the software index row by row).
	if i := strings.LastIndex(q, " ORDER BY "); i > 0 && !strings.Contains(q[i:], ")") && !strings.Contains(q[i:], "?") {
		q = q[:i]
	}
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM (`+q+`) AS report`, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count report %s: %w", source, err)
	}
	return n, nil
}

// reportCell scans one column of a report query into the holder of its
// kind: a string, an integer, a float or a boolean, and whether it was
// not NULL. A text or integer value keeps the interface the driver boxed
// it in, so that the row's value needs no second allocation.
type reportCell struct {
	kind  colKind
	valid bool
	s     string
	i     int64
	f     float64
	b     bool
	boxed any // the driver's value when it is the report value as is
}

func (c *reportCell) Scan(src any) error {
	c.valid, c.boxed = src != nil, nil
	if src == nil {
		return nil
	}
	var ok bool
	switch c.kind {
	case kText, kList:
		switch x := src.(type) {
		case string:
			c.s, c.boxed = x, src
		case []byte:
			c.s = string(x)
		case int64:
			c.s = strconv.FormatInt(x, 10)
		case bool:
			c.s = strconv.FormatBool(x)
		case time.Time:
			c.s = x.UTC().Format(time.RFC3339)
		default:
			c.s = fmt.Sprint(x)
		}
		return nil
	case kInt, kTime:
		c.i, ok = asInt(src)
		if _, isInt := src.(int64); isInt && c.kind == kInt {
			c.boxed = src
		}
	case kFloat:
		c.f, ok = asFloat(src)
	case kBool:
		if b, isBool := src.(bool); isBool {
			c.b, ok = b, true
		} else {
			var n int64
			n, ok = asInt(src)
			c.b = n != 0
		}
	}
	if !ok {
		return fmt.Errorf("value %T is not of the column's kind", src)
	}
	return nil
}

// value is the report value of the cell (see the colKind constants).
func (c *reportCell) value() (any, error) {
	if !c.valid {
		if c.kind == kBool {
			return false, nil
		}
		return nil, nil
	}
	switch c.kind {
	case kText:
		if c.boxed != nil {
			return c.boxed, nil
		}
		return c.s, nil
	case kInt:
		if c.boxed != nil {
			return c.boxed, nil
		}
		return c.i, nil
	case kFloat:
		return math.Round(c.f*100) / 100, nil
	case kBool:
		return c.b, nil
	case kTime:
		return fromMillis(c.i).Format(time.RFC3339), nil
	case kList:
		var list []string
		if err := json.Unmarshal([]byte(c.s), &list); err != nil {
			return nil, err
		}
		return strings.Join(list, ", "), nil
	}
	return nil, fmt.Errorf("unknown column kind %d", c.kind)
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		return int64(x), true
	case float32:
		return int64(x), true
	case []byte:
		return parseInt(string(x))
	case string:
		return parseInt(x)
	}
	return 0, false
}

// parseInt reads an integer, or a decimal number truncated toward zero
// (PostgreSQL answers numeric for some aggregates).
func parseInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	return int64(f), err == nil
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case []byte:
		f, err := strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// ReportDataset is one endpoint's rows of a dataset, for reports.
type ReportDataset struct {
	EndpointID   string
	EndpointName string
	Platform     string
	CollectedAt  time.Time
	Rows         []map[string]any
}

// ReportDatasets yields, endpoint by endpoint in name order, the rows of the
// named dataset across the organization, only from endpoints of platform
// when it is not empty. One endpoint's rows are in memory at a time. When
// keys is not nil, each row holds only those of its keys (the others are
// not decoded).
func (s *Store) ReportDatasets(ctx context.Context, orgID, name, platform string, keys []string) iter.Seq2[ReportDataset, error] {
	return s.reportDatasets(ctx, orgID, name, platform, keys, "", "")
}

// reportDatasets is ReportDatasets from the endpoint (fromSort, fromID) on,
// when fromID is set.
func (s *Store) reportDatasets(ctx context.Context, orgID, name, platform string, keys []string, fromSort, fromID string) iter.Seq2[ReportDataset, error] {
	return func(yield func(ReportDataset, error) bool) {
		q := `SELECT d.endpoint_id, COALESCE(e.display_name, e.hostname), e.platform, d.collected_at, d.rows_gz
			FROM endpoint_datasets d JOIN endpoints e ON e.id = d.endpoint_id
			WHERE d.org_id = ? AND d.name = ?`
		args := []any{orgID, name}
		if platform != "" {
			q += ` AND e.platform = ?`
			args = append(args, platform)
		}
		if fromID != "" {
			q += ` AND (e.sort_name > ? OR (e.sort_name = ? AND e.id >= ?))`
			args = append(args, fromSort, fromSort, fromID)
		}
		rows, err := s.query(ctx, q+` ORDER BY e.sort_name, e.id`, args...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var d ReportDataset
			var at int64
			var blob []byte
			if err := r.Scan(&d.EndpointID, &d.EndpointName, &d.Platform, &at, &blob); err != nil {
				return err
			}
			d.CollectedAt = fromMillis(at)
			var err error
			if keys != nil {
				d.Rows, err = decompressKeys(blob, keys)
			} else {
				d.Rows, err = decompressRows(blob)
			}
			if err != nil {
				yield(ReportDataset{}, fmt.Errorf("store: dataset %s of %s: %w", name, d.EndpointID, err))
				return errStopRows
			}
			if !yield(d, nil) {
				return errStopRows
			}
			return nil
		}); err != nil {
			yield(ReportDataset{}, fmt.Errorf("store: dataset %s: %w", name, err))
		}
	}
}

// DatasetPage locates a page of a dataset's rows across the organization's
// endpoints (in name order) from the row counts stored with each dataset,
// without reading the rows.
type DatasetPage struct {
	// Total counts every row of the dataset.
	Total int
	// Skip is how many rows of the first dataset Rows yields come before
	// the page.
	Skip int
	// Rows yields the datasets from the one holding the page's first row
	// on; the caller stops reading once it has its page.
	Rows iter.Seq2[ReportDataset, error]
}

// ReportDatasetPage answers the page of the named dataset that starts at
// row offset (platform and keys as for ReportDatasets).
func (s *Store) ReportDatasetPage(ctx context.Context, orgID, name, platform string, keys []string, offset int) (DatasetPage, error) {
	q := `SELECT e.sort_name, e.id, d.row_count FROM endpoint_datasets d JOIN endpoints e ON e.id = d.endpoint_id
		WHERE d.org_id = ? AND d.name = ?`
	args := []any{orgID, name}
	if platform != "" {
		q += ` AND e.platform = ?`
		args = append(args, platform)
	}
	rows, err := s.query(ctx, q+` ORDER BY e.sort_name, e.id`, args...)
	var page DatasetPage
	var fromSort, fromID string
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var sortName, id string
		var n int
		if err := r.Scan(&sortName, &id, &n); err != nil {
			return err
		}
		if fromID == "" && page.Total+n > offset {
			fromSort, fromID, page.Skip = sortName, id, offset-page.Total
		}
		page.Total += n
		return nil
	}); err != nil {
		return DatasetPage{}, fmt.Errorf("store: dataset %s counts: %w", name, err)
	}
	if fromID == "" {
		page.Rows = func(func(ReportDataset, error) bool) {}
		return page, nil
	}
	page.Rows = s.reportDatasets(ctx, orgID, name, platform, keys, fromSort, fromID)
	return page, nil
}

// ReportEndpoint is what reports that combine sources per endpoint need.
type ReportEndpoint struct {
	ID, Name, Platform string
	OS, CPU, Antivirus string
	RAMGB              *float64
	SystemDiskGB       *float64
	InventoryAt        time.Time
	// MissingCritical counts missing Critical updates; CriticalVulns the
	// critical CVEs found.
	MissingCritical, CriticalVulns int
}

// ReportEndpoints lists the organization's endpoints (of platform, when set)
// in name order with their counts of critical problems.
func (s *Store) ReportEndpoints(ctx context.Context, orgID, platform string) ([]ReportEndpoint, error) {
	q := `SELECT e.id, COALESCE(e.display_name, e.hostname), e.platform, COALESCE(e.os, ''), COALESCE(e.cpu, ''), COALESCE(e.antivirus, ''),
		e.ram_gb, (SELECT MAX(d.size_gb) FROM endpoint_disks d WHERE d.endpoint_id = e.id AND d.pos = 0), e.inventory_at,
		e.missing_critical,
		(SELECT COUNT(DISTINCT ev.cve_id) FROM endpoint_vulns ev LEFT JOIN vuln_cves c ON c.id = ev.cve_id WHERE ev.endpoint_id = e.id
			AND (upper(c.severity) = 'CRITICAL' OR (c.severity IS NULL AND c.cvss >= 9)))
		FROM endpoints e WHERE e.org_id = ?`
	args := []any{orgID}
	if platform != "" {
		q += ` AND e.platform = ?`
		args = append(args, platform)
	}
	rows, err := s.query(ctx, q+` ORDER BY e.sort_name, e.id`, args...)
	var out []ReportEndpoint
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var e ReportEndpoint
		var ram, disk *float64
		var at *int64
		if err := r.Scan(&e.ID, &e.Name, &e.Platform, &e.OS, &e.CPU, &e.Antivirus, &ram, &disk, &at, &e.MissingCritical, &e.CriticalVulns); err != nil {
			return err
		}
		e.RAMGB, e.SystemDiskGB = ram, disk
		if at != nil {
			e.InventoryAt = fromMillis(*at)
		}
		out = append(out, e)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: report endpoints: %w", err)
	}
	return out, nil
}

// LatestInventory is when the newest inventory of the organization was
// collected (zero when none was).
func (s *Store) LatestInventory(ctx context.Context, orgID string) (time.Time, error) {
	var at *int64
	if err := s.queryRow(ctx, `SELECT MAX(inventory_at) FROM endpoints WHERE org_id = ?`, orgID).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("store: latest inventory: %w", err)
	}
	if at == nil {
		return time.Time{}, nil
	}
	return fromMillis(*at), nil
}
