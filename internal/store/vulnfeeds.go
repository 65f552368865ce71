package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/vulns/feeds"
)

// The global vulnerability feeds (NVD CVEs, CISA KEV, OSV advisories), the
// counters that tell replicas a feed changed, and the leases that keep
// syncing and matching to one replica at a time.

// FeedBatch is a set of feed records stored in one transaction. Rejected
// lists CVE ids the NVD now marks Rejected: they are deleted.
type FeedBatch struct {
	CVEs     []feeds.CVE
	Rejected []string
	KEVs     []feeds.KEV
	OSV      []feeds.OSVAdvisory
	MSRC     []feeds.MSRCDocument
	// OfficeBuilds is a Microsoft 365 Apps release history.
	OfficeBuilds []feeds.OfficeBuild
	// EPSS are rows of FIRST's EPSS file.
	EPSS []feeds.EPSS
}

// Len is the number of records in the batch (an MSRC document counts its
// CVEs).
func (b *FeedBatch) Len() int {
	n := len(b.CVEs) + len(b.Rejected) + len(b.KEVs) + len(b.OSV) + len(b.OfficeBuilds) + len(b.EPSS)
	for _, d := range b.MSRC {
		n += len(d.Vulns)
	}
	return n
}

// storedRule is the compact JSON form of a feeds.CPEMatch in vuln_cves.rules.
type storedRule struct {
	Part      string `json:"p,omitempty"`
	Vendor    string `json:"v"`
	Product   string `json:"n"`
	Version   string `json:"ver,omitempty"`
	Update    string `json:"u,omitempty"`
	StartIncl string `json:"si,omitempty"`
	StartExcl string `json:"se,omitempty"`
	EndIncl   string `json:"ei,omitempty"`
	EndExcl   string `json:"ee,omitempty"`
	TargetSW  string `json:"t,omitempty"`
}

func encodeRules(ms []feeds.CPEMatch) string {
	out := make([]storedRule, len(ms))
	for i, m := range ms {
		t := m.TargetSW
		if t == "*" {
			t = ""
		}
		out[i] = storedRule{Part: m.Part, Vendor: m.Vendor, Product: m.Product, Version: m.Version, Update: m.Update,
			StartIncl: m.StartIncl, StartExcl: m.StartExcl, EndIncl: m.EndIncl, EndExcl: m.EndExcl, TargetSW: t}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func decodeRules(s string) ([]feeds.CPEMatch, error) {
	var in []storedRule
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, err
	}
	out := make([]feeds.CPEMatch, len(in))
	for i, r := range in {
		t := r.TargetSW
		if t == "" {
			t = "*"
		}
		out[i] = feeds.CPEMatch{Part: r.Part, Vendor: r.Vendor, Product: r.Product, Version: r.Version, Update: r.Update,
			StartIncl: r.StartIncl, StartExcl: r.StartExcl, EndIncl: r.EndIncl, EndExcl: r.EndExcl, TargetSW: t}
	}
	return out, nil
}

func zeroMillis(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return millis(t)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// StoreFeeds upserts the records of b (a re-import updates, never
// duplicates) and deletes rejected CVEs. It does not bump the feed version:
// call BumpFeedVersion once the whole import is stored.
func (s *Store) StoreFeeds(ctx context.Context, b FeedBatch) error {
	if b.Len() == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Tx) error {
		// One statement cannot upsert the same key twice: the last record
		// of a key wins.
		cves := lastByKey(b.CVEs, func(c feeds.CVE) string { return c.ID })
		rows := make([][]any, 0, len(cves))
		for _, c := range cves {
			var cvss any
			if c.CVSS != nil {
				cvss = *c.CVSS
			}
			rows = append(rows, []any{c.ID, zeroMillis(c.Published), zeroMillis(c.Modified), nullIfEmpty(c.Description), cvss,
				nullIfEmpty(c.CVSSVersion), nullIfEmpty(c.Severity), nullIfEmpty(c.Vector), encodeRules(c.CPEMatches)})
		}
		if err := tx.upsertRows(ctx, "vuln_cves", []string{"id", "published", "modified", "description", "cvss", "cvss_version", "severity", "vector", "rules"},
			[]string{"id"}, rows); err != nil {
			return err
		}
		for _, id := range b.Rejected {
			if _, err := tx.exec(ctx, `DELETE FROM vuln_cves WHERE id = ?`, id); err != nil {
				return fmt.Errorf("store: delete rejected CVE: %w", err)
			}
		}
		kevs := lastByKey(b.KEVs, func(k feeds.KEV) string { return k.CVEID })
		rows = rows[:0]
		for _, k := range kevs {
			rows = append(rows, []any{k.CVEID, zeroMillis(k.DateAdded), zeroMillis(k.DueDate), k.Ransomware, nullIfEmpty(k.VendorProject),
				nullIfEmpty(k.Product), nullIfEmpty(k.Name), nullIfEmpty(k.Description)})
		}
		if err := tx.upsertRows(ctx, "vuln_kev", []string{"cve_id", "date_added", "due_date", "ransomware", "vendor_project", "product", "name", "description"},
			[]string{"cve_id"}, rows); err != nil {
			return err
		}
		epss := lastByKey(b.EPSS, func(e feeds.EPSS) string { return e.CVEID })
		rows = rows[:0]
		for _, e := range epss {
			rows = append(rows, []any{e.CVEID, e.Score, e.Percentile, e.ModelVersion, zeroMillis(e.ScoreDate)})
		}
		if err := tx.upsertRows(ctx, "vuln_epss", []string{"cve_id", "epss", "percentile", "model_version", "score_date"}, []string{"cve_id"}, rows); err != nil {
			return err
		}
		if err := tx.storeMSRC(ctx, b.MSRC); err != nil {
			return err
		}
		if err := tx.storeOfficeBuilds(ctx, b.OfficeBuilds); err != nil {
			return err
		}
		advisories := lastByKey(b.OSV, func(a feeds.OSVAdvisory) string { return a.ID + "\x00" + a.Ecosystem + "\x00" + a.Package })
		rows = rows[:0]
		for _, a := range advisories {
			if a.Ecosystem == "" || a.Package == "" {
				continue
			}
			rows = append(rows, []any{a.ID, a.Ecosystem, a.Package, jsonText(nonNilStrings(a.CVEs)), nullIfEmpty(a.Summary), jsonText(nonNilRanges(a.Ranges)),
				jsonText(nonNilStrings(a.Versions)), nullIfEmpty(a.Severity), zeroMillis(a.Published), zeroMillis(a.Modified), zeroMillis(a.Withdrawn)})
		}
		return tx.upsertRows(ctx, "vuln_osv", []string{"id", "ecosystem", "package", "cves", "summary", "ranges", "versions", "severity", "published", "modified", "withdrawn"},
			[]string{"id", "ecosystem", "package"}, rows)
	})
}

func nonNilRanges(r []feeds.AffectedRange) []feeds.AffectedRange {
	if r == nil {
		return []feeds.AffectedRange{}
	}
	return r
}

func lastByKey[T any](in []T, key func(T) string) []T {
	pos := make(map[string]int, len(in))
	out := make([]T, 0, len(in))
	for _, v := range in {
		k := key(v)
		if i, ok := pos[k]; ok {
			out[i] = v
			continue
		}
		pos[k] = len(out)
		out = append(out, v)
	}
	return out
}

// upsertRows inserts rows in multi-row statements, replacing every other
// column of a row whose key exists.
func (tx *Tx) upsertRows(ctx context.Context, table string, columns, key []string, rows [][]any) error {
	perStatement := max(1, 900/len(columns))
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	isKey := map[string]bool{}
	for _, k := range key {
		isKey[k] = true
	}
	var set []string
	for _, c := range columns {
		if !isKey[c] {
			set = append(set, c+" = excluded."+c)
		}
	}
	head := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES "
	tail := " ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
	for start := 0; start < len(rows); start += perStatement {
		end := min(start+perStatement, len(rows))
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, (end-start)*len(columns))
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, rows[i]...)
		}
		b.WriteString(tail)
		if _, err := tx.exec(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("store: upsert into %s: %w", table, err)
		}
	}
	return nil
}

// FeedCounts counts the stored feed records.
type FeedCounts struct {
	CVEs int `json:"cves"`
	KEV  int `json:"kev"`
	OSV  int `json:"osv"`
	// MSRC counts the CVEs of Microsoft's security update data.
	MSRC int `json:"msrc"`
	// OfficeBuilds counts the Microsoft 365 Apps releases (build and
	// channel).
	OfficeBuilds int `json:"officeBuilds"`
	// EPSS counts the CVEs with an EPSS score.
	EPSS int `json:"epss"`
}

// CountFeeds counts the stored feed records.
func (s *Store) CountFeeds(ctx context.Context) (FeedCounts, error) {
	var c FeedCounts
	err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM vuln_cves), (SELECT COUNT(*) FROM vuln_kev), (SELECT COUNT(*) FROM vuln_osv), (SELECT COUNT(*) FROM msrc_cves),
		(SELECT COUNT(*) FROM office_builds), (SELECT COUNT(*) FROM vuln_epss)`).
		Scan(&c.CVEs, &c.KEV, &c.OSV, &c.MSRC, &c.OfficeBuilds, &c.EPSS)
	if err != nil {
		return c, fmt.Errorf("store: count feeds: %w", err)
	}
	return c, nil
}

// ScanFeeds streams the stored CVEs (with their CPE rules) and OSV
// advisories, to build the matcher's index.
func (s *Store) ScanFeeds(ctx context.Context, cve func(feeds.CVE), osv func(feeds.OSVAdvisory)) error {
	rows, err := s.query(ctx, `SELECT id, rules FROM vuln_cves WHERE rules <> '[]'`)
	var invalid error // a record that does not decode
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, rules string
		if err := r.Scan(&id, &rules); err != nil {
			return err
		}
		ms, err := decodeRules(rules)
		if err != nil {
			invalid = fmt.Errorf("store: CVE %s rules: %w", id, err)
			return errStopRows
		}
		cve(feeds.CVE{ID: id, CPEMatches: ms})
		return nil
	}); err != nil {
		return fmt.Errorf("store: read CVE rules: %w", err)
	}
	if invalid != nil {
		return invalid
	}
	rows, err = s.query(ctx, `SELECT id, ecosystem, package, cves, ranges, versions FROM vuln_osv WHERE withdrawn IS NULL`)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var a feeds.OSVAdvisory
		var cves, ranges, versions string
		if err := r.Scan(&a.ID, &a.Ecosystem, &a.Package, &cves, &ranges, &versions); err != nil {
			return err
		}
		if err := errors.Join(json.Unmarshal([]byte(cves), &a.CVEs), json.Unmarshal([]byte(ranges), &a.Ranges),
			json.Unmarshal([]byte(versions), &a.Versions)); err != nil {
			invalid = fmt.Errorf("store: OSV advisory %s: %w", a.ID, err)
			return errStopRows
		}
		osv(a)
		return nil
	}); err != nil {
		return fmt.Errorf("store: read OSV advisories: %w", err)
	}
	return invalid
}

// The names of vuln_state rows.
const (
	StateFeedVersion    = "feed_version"
	StateMatchedVersion = "matched_version"
	StateNVDSynced      = "nvd_synced"
	StateMSRCSynced     = "msrc_synced"
	LeaseMatch          = "match"
	LeaseSync           = "sync"
)

// VulnState reads a counter of vuln_state.
func (s *Store) VulnState(ctx context.Context, name string) (int64, error) {
	var n int64
	err := s.queryRow(ctx, `SELECT num FROM vuln_state WHERE name = ?`, name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: vulnerability state %s: %w", name, err)
	}
	return n, nil
}

// VulnStates reads several counters of vuln_state in one query.
func (s *Store) VulnStates(ctx context.Context, names ...string) (map[string]int64, error) {
	rows, err := s.query(ctx, `SELECT name, num FROM vuln_state WHERE name IN (`+placeholders(len(names))+`)`, anySlice(names)...)
	out := make(map[string]int64, len(names))
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var name string
		var n int64
		if err := r.Scan(&name, &n); err != nil {
			return err
		}
		out[name] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: vulnerability state: %w", err)
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("store: vulnerability state %s: %w", name, dberr.ErrNotFound)
		}
	}
	return out, nil
}

// SetVulnState writes a counter of vuln_state.
func (s *Store) SetVulnState(ctx context.Context, name string, n int64) error {
	if _, err := s.exec(ctx, `UPDATE vuln_state SET num = ? WHERE name = ?`, n, name); err != nil {
		return fmt.Errorf("store: vulnerability state %s: %w", name, err)
	}
	return nil
}

// BumpFeedVersion records that the feeds changed: every replica rebuilds
// its matcher index and the fleet is matched again.
func (s *Store) BumpFeedVersion(ctx context.Context) (int64, error) {
	var n int64
	err := s.write.QueryRowContext(ctx, s.q(`UPDATE vuln_state SET num = num + 1 WHERE name = ? RETURNING num`), StateFeedVersion).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: bump feed version: %w", err)
	}
	return n, nil
}

// FinishFeedChange bumps the feed version (as BumpFeedVersion) and records
// e, the change, in the instance's Audit Trail in the same transaction: a
// feed change that counts (the fleet is matched against it) is never
// unaudited. e.Summary gets the new version as "feedVersion".
func (s *Store) FinishFeedChange(ctx context.Context, e *InstanceEvent) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.queryRow(ctx, `UPDATE vuln_state SET num = num + 1 WHERE name = ? RETURNING num`, StateFeedVersion).Scan(&n); err != nil {
			return fmt.Errorf("store: bump feed version: %w", err)
		}
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["feedVersion"] = n
		return tx.insertInstanceEvent(ctx, e)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ClaimVulnLease takes the lease name for holder until now+d, when it is
// free, expired or already held by holder; ok says whether it was taken.
func (s *Store) ClaimVulnLease(ctx context.Context, name, holder string, now time.Time, d time.Duration) (bool, error) {
	n, err := s.leaseExec(ctx, `UPDATE vuln_state SET holder = ?, lease_until = ? WHERE name = ? AND (lease_until < ? OR holder = ?)`,
		holder, millis(now.Add(d)), name, millis(now), holder)
	if err != nil {
		return false, fmt.Errorf("store: claim lease %s: %w", name, err)
	}
	return n == 1, nil
}

// leaseExec writes a lease. On PostgreSQL the commit does not wait for the
// disk (see asyncCommit): the wait for the WAL flush was most of the time
// of one endpoint's recompute when the matcher claimed and released its
// lease on every pass. A lease lost in a database crash is harmless:
// the transactions of its holder are lost with it, and results are written
// under row locks, so even two holders at once only match twice.
func (s *Store) leaseExec(ctx context.Context, q string, args ...any) (int64, error) {
	if s.engine != Postgres {
		res, err := s.exec(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.asyncCommit(ctx); err != nil {
			return err
		}
		res, err := tx.exec(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// ReleaseVulnLease frees the lease name if holder has it.
func (s *Store) ReleaseVulnLease(ctx context.Context, name, holder string) error {
	if _, err := s.leaseExec(ctx, `UPDATE vuln_state SET holder = NULL, lease_until = 0 WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("store: release lease %s: %w", name, err)
	}
	return nil
}
