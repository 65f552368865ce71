package store

import (
	"context"
	"fmt"

	"github.com/patchd/patchd/internal/vulns/feeds"
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
}

// ScanMSRCFixes streams every stored MSRC fix that names a fixed build, to
// build the matcher's index.
func (s *Store) ScanMSRCFixes(ctx context.Context, fn func(MSRCFix)) error {
	rows, err := s.query(ctx, `SELECT f.cve_id, f.product_id, COALESCE(p.name, ''), f.kb, f.fixed_build, f.sub_type
		FROM msrc_fixes f LEFT JOIN msrc_products p ON p.id = f.product_id WHERE f.fixed_build <> ''`)
	if err != nil {
		return fmt.Errorf("store: read MSRC fixes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f MSRCFix
		if err := rows.Scan(&f.CVEID, &f.ProductID, &f.ProductName, &f.KB, &f.FixedBuild, &f.SubType); err != nil {
			return fmt.Errorf("store: read MSRC fixes: %w", err)
		}
		fn(f)
	}
	if err := rows.Err(); err != nil {
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
	if err != nil {
		return nil, fmt.Errorf("store: read MSRC CVEs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c MSRCCVE
		if err := rows.Scan(&c.CVEID, &c.Title, &c.CVSS, &c.Severity, &c.Exploited, &c.Release); err != nil {
			return nil, fmt.Errorf("store: read MSRC CVEs: %w", err)
		}
		out[c.CVEID] = c
	}
	return out, rows.Err()
}
