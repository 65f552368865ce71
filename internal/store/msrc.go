package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/vulns/feeds"
	"github.com/patchd/patchd/internal/vulns/match"
)

// storeMSRC upserts MSRC documents: their products, CVEs and vendor fixes.
// A CVE revised in a later document takes that document's values; fixes are
// added or updated, never removed (a month's document does not list the
// fixes of other months).
func (tx *Tx) storeMSRC(ctx context.Context, docs []feeds.MSRCDocument) error {
	if len(docs) == 0 {
		return nil
	}
	var products, cves, fixes [][]any
	for _, d := range docs {
		for _, p := range d.Products {
			products = append(products, []any{p.ID, p.Name})
		}
		for _, v := range d.Vulns {
			var cvss any
			if v.CVSS != nil {
				cvss = *v.CVSS
			}
			cves = append(cves, []any{v.CVE, nullIfEmpty(v.Title), cvss, nullIfEmpty(v.Vector), nullIfEmpty(v.Severity),
				v.Exploited, v.Disclosed, d.ID, zeroMillis(d.Released)})
			for _, f := range v.Fixes {
				fixes = append(fixes, []any{v.CVE, f.ProductID, f.KB, f.FixedBuild, f.SubType, d.ID})
			}
		}
	}
	products = lastByKey(products, func(r []any) string { return r[0].(string) })
	cves = lastByKey(cves, func(r []any) string { return r[0].(string) })
	fixes = lastByKey(fixes, func(r []any) string { return r[0].(string) + "\x00" + r[1].(string) + "\x00" + r[2].(string) })
	if err := tx.upsertRows(ctx, "msrc_products", []string{"id", "name"}, []string{"id"}, products); err != nil {
		return err
	}
	if err := tx.upsertRows(ctx, "msrc_cves", []string{"cve_id", "title", "cvss", "vector", "severity", "exploited", "disclosed", "release", "released"},
		[]string{"cve_id"}, cves); err != nil {
		return err
	}
	return tx.upsertRows(ctx, "msrc_fixes", []string{"cve_id", "product_id", "kb", "fixed_build", "sub_type", "release"},
		[]string{"cve_id", "product_id", "kb"}, fixes)
}

// MSRCFix is one stored vendor fix with its product's name.
type MSRCFix struct {
	CVEID       string
	ProductID   string
	ProductName string
	KB          string
	FixedBuild  string
	SubType     string
	// Release is the document of the fix ("2025-Nov"): a Click-to-Run fix
	// is the builds of that month's Patch Tuesday.
	Release string
}

// ScanMSRCFixes streams every stored MSRC fix that names a fixed build, and
// every Click-to-Run fix (feeds.ClickToRun, which names none), to build the
// matcher's index.
func (s *Store) ScanMSRCFixes(ctx context.Context, fn func(MSRCFix)) error {
	rows, err := s.query(ctx, `SELECT f.cve_id, f.product_id, COALESCE(p.name, ''), f.kb, f.fixed_build, f.sub_type, f.release
		FROM msrc_fixes f LEFT JOIN msrc_products p ON p.id = f.product_id WHERE f.fixed_build <> '' OR f.kb = ?`, feeds.ClickToRun)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var f MSRCFix
		if err := r.Scan(&f.CVEID, &f.ProductID, &f.ProductName, &f.KB, &f.FixedBuild, &f.SubType, &f.Release); err != nil {
			return err
		}
		fn(f)
		return nil
	}); err != nil {
		return fmt.Errorf("store: read MSRC fixes: %w", err)
	}
	return nil
}

// MSRCCVE is Microsoft's record of a CVE.
type MSRCCVE struct {
	CVEID     string
	Title     string
	CVSS      *float64
	Severity  string
	Exploited bool
	Release   string
}

// MSRCCVEs reads Microsoft's records of the CVEs ids (those stored).
func (s *Store) MSRCCVEs(ctx context.Context, ids []string) (map[string]MSRCCVE, error) {
	out := map[string]MSRCCVE{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.query(ctx, `SELECT cve_id, COALESCE(title, ''), cvss, COALESCE(severity, ''), exploited, release
		FROM msrc_cves WHERE cve_id IN (`+placeholders(len(ids))+`)`, anySlice(ids)...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var c MSRCCVE
		if err := r.Scan(&c.CVEID, &c.Title, &c.CVSS, &c.Severity, &c.Exploited, &c.Release); err != nil {
			return err
		}
		out[c.CVEID] = c
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: read MSRC CVEs: %w", err)
	}
	return out, nil
}

// normalKB answers "KB5071417" for "KB5071417", "kb5071417" or "5071417",
// "" for anything else.
func normalKB(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2 && strings.EqualFold(s[:2], "KB") {
		s = s[2:]
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return ""
	}
	return "KB" + s
}

// fillUpdateCVEs adds to a page of missing updates the CVEs each fixes on
// its endpoint (Update.cves). A Windows update fixes every Windows finding
// of the endpoint whose fixed build is at or below the build the KB brings
// for the endpoint's product (MSRC msrc_fixes): cumulative updates fix what
// earlier KBs fixed.
func (r *ReadTx) fillUpdateCVEs(ctx context.Context, orgID string, page []apiv1.Update) error {
	return fillKBCVEs(ctx, r.query, orgID, page)
}

// fillKBCVEs is fillUpdateCVEs with the query of a transaction or the store.
func fillKBCVEs(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), orgID string, page []apiv1.Update) error {
	kbs := map[string]bool{}
	endpoints := map[string]bool{}
	for _, u := range page {
		if u.KB == nil {
			continue
		}
		if kb := normalKB(*u.KB); kb != "" {
			kbs[kb], endpoints[u.EndpointID] = true, true
		}
	}
	if len(kbs) == 0 {
		return nil
	}
	// The build each KB brings, per product name.
	type kbProduct struct{ kb, product string }
	builds := map[kbProduct]match.WinBuild{}
	kbList := make([]string, 0, len(kbs))
	for kb := range kbs {
		kbList = append(kbList, kb)
	}
	rows, err := query(ctx, `SELECT f.kb, p.name, f.fixed_build FROM msrc_fixes f JOIN msrc_products p ON p.id = f.product_id
		WHERE f.fixed_build <> '' AND f.kb IN (`+placeholders(len(kbList))+`)`, anySlice(kbList)...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var kb, product, build string
		if err := r.Scan(&kb, &product, &build); err != nil {
			return err
		}
		b, ok := match.ParseWinBuild(build)
		if !ok {
			return nil
		}
		k := kbProduct{kb, product}
		if o, seen := builds[k]; !seen || b.Compare(o) > 0 {
			builds[k] = b
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store: update CVEs: %w", err)
	}
	if len(builds) == 0 {
		return nil
	}
	// The Windows findings of the page's endpoints.
	type finding struct {
		cve, product string
		fixed        match.WinBuild
	}
	ids := make([]string, 0, len(endpoints))
	for id := range endpoints {
		ids = append(ids, id)
	}
	findings := map[string][]finding{}
	rows, err = query(ctx, `SELECT endpoint_id, cve_id, software, source, COALESCE(fixed_in, '') FROM endpoint_vulns
		WHERE org_id = ? AND endpoint_id IN (`+placeholders(len(ids))+`)`, append([]any{orgID}, anySlice(ids)...)...)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var id, cve, software, source, fixedIn string
		if err := row.Scan(&id, &cve, &software, &source, &fixedIn); err != nil {
			return err
		}
		if !isKB(source) {
			return nil
		}
		if b, ok := match.ParseWinBuild(fixedIn); ok {
			findings[id] = append(findings[id], finding{cve: cve, product: software, fixed: b})
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store: update CVEs: %w", err)
	}
	for i := range page {
		u := &page[i]
		if u.KB == nil {
			continue
		}
		kb := normalKB(*u.KB)
		for _, f := range findings[u.EndpointID] {
			if b, ok := builds[kbProduct{kb, f.product}]; ok && f.fixed.Compare(b) <= 0 {
				u.CVEs = append(u.CVEs, f.cve)
			}
		}
		slices.Sort(u.CVEs)
		u.CVEs = slices.Compact(u.CVEs)
	}
	return nil
}
