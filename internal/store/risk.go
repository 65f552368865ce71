package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/vulns"
)

// CVEFacts answers what the feeds say of each CVE for its severity and
// risk (CVSS, NVD rating, KEV, EPSS); a CVE no feed knows is left out.
func (s *Store) CVEFacts(ctx context.Context, ids []string) (map[string]vulns.CVEFacts, error) {
	return cveFacts(ctx, s.query, ids)
}

func cveFacts(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), ids []string) (map[string]vulns.CVEFacts, error) {
	out := map[string]vulns.CVEFacts{}
	get := func(id string) vulns.CVEFacts {
		f, ok := out[id]
		if !ok {
			f.ID = id
		}
		return f
	}
	for start := 0; start < len(ids); start += inChunk {
		part := anySlice(ids[start:min(start+inChunk, len(ids))])
		in := `(` + placeholders(len(part)) + `)`
		rows, err := query(ctx, `SELECT id, cvss, COALESCE(severity, '') FROM vuln_cves WHERE id IN `+in, part...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id, sev string
			var cvss sql.NullFloat64
			if err := r.Scan(&id, &cvss, &sev); err != nil {
				return err
			}
			f := get(id)
			f.CVSS, f.NVDSeverity = nullFloat(cvss), sev
			out[id] = f
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: CVE facts: %w", err)
		}
		rows, err = query(ctx, `SELECT cve_id, cvss FROM msrc_cves WHERE cvss IS NOT NULL AND cve_id IN `+in, part...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id string
			var cvss float64
			if err := r.Scan(&id, &cvss); err != nil {
				return err
			}
			if f := get(id); f.CVSS == nil {
				// Microsoft's score, for a CVE the NVD has not scored (as
				// the vulnerability list reads it).
				f.CVSS = &cvss
				out[id] = f
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: CVE facts: %w", err)
		}
		rows, err = query(ctx, `SELECT cve_id FROM vuln_kev WHERE cve_id IN `+in, part...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id string
			if err := r.Scan(&id); err != nil {
				return err
			}
			f := get(id)
			f.KEV = true
			out[id] = f
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: CVE facts: %w", err)
		}
		rows, err = query(ctx, `SELECT cve_id, epss FROM vuln_epss WHERE cve_id IN `+in, part...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id string
			var p float64
			if err := r.Scan(&id, &p); err != nil {
				return err
			}
			f := get(id)
			f.EPSS = &p
			out[id] = f
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: CVE facts: %w", err)
		}
	}
	return out, nil
}

// RefreshUpdateRisk recomputes, for the organization's update keys missing
// on the endpoints (every key of the organization when endpointIDs is
// nil), what they fix across the fleet: the CVEs (as Update.cves pairs
// them: fixPairs, kbFixPairs), and from them the key's effective severity,
// cve_count, kev, max_cvss, max_epss, top_cve and risk
// (vulns.UpdateSeverity, vulns.Fixes). The vulnerability matcher calls it
// after storing results. It answers how many keys changed.
func (s *Store) RefreshUpdateRisk(ctx context.Context, orgID string, endpointIDs []string) (int, error) {
	var keys []string
	if endpointIDs == nil {
		rows, err := s.query(ctx, `SELECT key FROM update_keys WHERE org_id = ? AND (endpoints > 0 OR cve_count > 0)`, orgID)
		if keys, err = scanRows(rows, err, scanString); err != nil {
			return 0, fmt.Errorf("store: update risk: %w", err)
		}
	} else {
		seen := map[string]bool{}
		for start := 0; start < len(endpointIDs); start += inChunk {
			part := anySlice(endpointIDs[start:min(start+inChunk, len(endpointIDs))])
			rows, err := s.query(ctx, `SELECT DISTINCT key FROM endpoint_updates WHERE org_id = ? AND endpoint_id IN (`+placeholders(len(part))+`)`,
				append([]any{orgID}, part...)...)
			ks, err := scanRows(rows, err, scanString)
			if err != nil {
				return 0, fmt.Errorf("store: update risk: %w", err)
			}
			for _, k := range ks {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	changed := 0
	var changedKeys []string
	for start := 0; start < len(keys); start += inChunk {
		n, ks, err := s.refreshKeyRisk(ctx, orgID, keys[start:min(start+inChunk, len(keys))])
		if err != nil {
			return changed, err
		}
		changed += n
		changedKeys = append(changedKeys, ks...)
	}
	// The missing updates' derived severity and the endpoints' counters:
	// every row of a key whose severity changed, and the rows of the
	// endpoints matched (an inventory stored while a key changed kept the
	// severity it read).
	for start := 0; start < len(changedKeys); start += inChunk {
		part := anySlice(changedKeys[start:min(start+inChunk, len(changedKeys))])
		if err := s.syncDerivedSeverity(ctx, orgID, `eu.key IN (`+placeholders(len(part))+`)`, part); err != nil {
			return changed, err
		}
	}
	for start := 0; start < len(endpointIDs); start += inChunk {
		part := anySlice(endpointIDs[start:min(start+inChunk, len(endpointIDs))])
		if err := s.syncDerivedSeverity(ctx, orgID, `eu.endpoint_id IN (`+placeholders(len(part))+`)`, part); err != nil {
			return changed, err
		}
		// A counter an inventory wrote from rows read before the matcher
		// changed them (PostgreSQL's read committed) is recounted here:
		// written only where it differs.
		if _, err := s.exec(ctx, `UPDATE endpoints SET `+recountMissing+` WHERE org_id = ? AND id IN (`+placeholders(len(part))+`) AND `+countsDiffer,
			append([]any{orgID}, part...)...); err != nil {
			return changed, fmt.Errorf("store: derived severity counts: %w", err)
		}
	}
	eps := endpointIDs
	if eps == nil {
		rows, err := s.query(ctx, `SELECT id FROM endpoints WHERE org_id = ?`, orgID)
		if eps, err = scanRows(rows, err, scanString); err != nil {
			return changed, fmt.Errorf("store: endpoint risk: %w", err)
		}
	}
	for start := 0; start < len(eps); start += inChunk {
		if err := s.refreshEndpointRisk(ctx, orgID, eps[start:min(start+inChunk, len(eps))]); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// refreshEndpointRisk stores the risk of the organization's endpoints ids
// (a chunk) where it changed: the highest risk of the CVEs found on each,
// and that CVE (EndpointRisk).
func (s *Store) refreshEndpointRisk(ctx context.Context, orgID string, ids []string) error {
	args := append([]any{orgID}, anySlice(ids)...)
	in := `(` + placeholders(len(ids)) + `)`
	type risk struct {
		score float64
		cve   string
	}
	current := map[string]risk{}
	rows, err := s.query(ctx, `SELECT id, risk, COALESCE(risk_cve, '') FROM endpoints WHERE org_id = ? AND id IN `+in, args...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		var x risk
		if err := r.Scan(&id, &x.score, &x.cve); err != nil {
			return err
		}
		current[id] = x
		return nil
	}); err != nil {
		return fmt.Errorf("store: endpoint risk: %w", err)
	}
	cves := map[string][]string{}
	all := map[string]bool{}
	rows, err = s.query(ctx, `SELECT DISTINCT endpoint_id, cve_id FROM endpoint_vulns WHERE org_id = ? AND endpoint_id IN `+in, args...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var ep, cve string
		if err := r.Scan(&ep, &cve); err != nil {
			return err
		}
		cves[ep] = append(cves[ep], cve)
		all[cve] = true
		return nil
	}); err != nil {
		return fmt.Errorf("store: endpoint risk: %w", err)
	}
	facts, err := s.CVEFacts(ctx, slices.Sorted(maps.Keys(all)))
	if err != nil {
		return err
	}
	type change struct {
		id string
		risk
	}
	var changes []change
	for _, id := range ids {
		old, ok := current[id]
		if !ok {
			continue
		}
		var f vulns.Fixes
		list := cves[id]
		slices.Sort(list)
		for _, c := range list {
			fc, ok := facts[c]
			if !ok {
				fc = vulns.CVEFacts{ID: c}
			}
			f.Add(fc)
		}
		if nw := (risk{score: f.Risk, cve: f.Top}); nw != old {
			changes = append(changes, change{id, nw})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	return s.InTx(ctx, func(tx *Tx) error {
		for _, c := range changes {
			var top *string
			if c.cve != "" {
				top = &c.cve
			}
			if _, err := tx.exec(ctx, `UPDATE endpoints SET risk = ?, risk_cve = ? WHERE id = ?`, c.score, top, c.id); err != nil {
				return fmt.Errorf("store: endpoint risk: %w", err)
			}
		}
		return nil
	})
}

// fillEndpointRisk says how the risk of a page of endpoints is made.
func fillEndpointRisk(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), page []apiv1.Endpoint) error {
	tops := map[string]bool{}
	for _, e := range page {
		if e.RiskCVE != nil {
			tops[*e.RiskCVE] = true
		}
	}
	if len(tops) == 0 {
		return nil
	}
	facts, err := cveFacts(ctx, query, slices.Sorted(maps.Keys(tops)))
	if err != nil {
		return err
	}
	for i, e := range page {
		if e.RiskCVE != nil {
			f, ok := facts[*e.RiskCVE]
			if !ok {
				f = vulns.CVEFacts{ID: *e.RiskCVE}
			}
			page[i].RiskReason = *e.RiskCVE + ": " + f.RiskReason()
		}
	}
	return nil
}

// syncDerivedSeverity sets the derived severity and KEV flag of the
// organization's missing updates matching cond (on endpoint_updates eu)
// from their keys where they differ, and recounts the missing updates of
// the endpoints whose rows changed.
func (s *Store) syncDerivedSeverity(ctx context.Context, orgID, cond string, args []any) error {
	type fix struct {
		id, severity string
		kev          bool
	}
	var fixes []fix
	endpoints := map[string]bool{}
	rows, err := s.query(ctx, `SELECT eu.id, eu.endpoint_id, eu.severity, eu.derived_severity, eu.kev, k.severity, k.kev
		FROM endpoint_updates eu JOIN update_keys k ON k.org_id = eu.org_id AND k.key = eu.key WHERE eu.org_id = ? AND `+cond,
		append([]any{orgID}, args...)...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, ep, reported, derived, keySev string
		var kev, keyKEV bool
		if err := r.Scan(&id, &ep, &reported, &derived, &kev, &keySev, &keyKEV); err != nil {
			return err
		}
		if want := higherSeverity(reported, keySev); want != derived || kev != keyKEV {
			fixes = append(fixes, fix{id: id, severity: want, kev: keyKEV})
			endpoints[ep] = true
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store: derived severity: %w", err)
	}
	if len(fixes) == 0 {
		return nil
	}
	eps := slices.Sorted(maps.Keys(endpoints))
	return s.InTx(ctx, func(tx *Tx) error {
		for _, f := range fixes {
			if _, err := tx.exec(ctx, `UPDATE endpoint_updates SET derived_severity = ?, kev = ? WHERE id = ?`, f.severity, f.kev, f.id); err != nil {
				return fmt.Errorf("store: derived severity: %w", err)
			}
		}
		for start := 0; start < len(eps); start += inChunk {
			part := anySlice(eps[start:min(start+inChunk, len(eps))])
			if _, err := tx.exec(ctx, `UPDATE endpoints SET `+recountMissing+` WHERE id IN (`+placeholders(len(part))+`)`, part...); err != nil {
				return fmt.Errorf("store: derived severity counts: %w", err)
			}
		}
		return nil
	})
}

// countsDiffer is the condition of an endpoint whose counters of missing
// updates are not those of its rows.
const countsDiffer = `(missing_critical <> (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Critical')
	OR missing_important <> (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Important')
	OR missing_moderate <> (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Moderate')
	OR missing_low <> (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Low')
	OR missing_unspecified <> (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id
		AND u.derived_severity NOT IN ('Critical', 'Important', 'Moderate', 'Low')))`

// recountMissing sets an endpoint's counters of missing updates from its
// rows (by derived severity).
const recountMissing = `missing_critical = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Critical'),
	missing_important = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Important'),
	missing_moderate = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Moderate'),
	missing_low = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Low'),
	missing_unspecified = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id
		AND u.derived_severity NOT IN ('Critical', 'Important', 'Moderate', 'Low'))`

// refreshKeyRisk is RefreshUpdateRisk of a chunk of keys; it answers how
// many keys changed and those whose severity or KEV flag did.
func (s *Store) refreshKeyRisk(ctx context.Context, orgID string, keys []string) (int, []string, error) {
	args := anySlice(keys)
	in := `(` + placeholders(len(keys)) + `)`
	cves := map[string]map[string]bool{} // key → CVEs
	add := func(key, cve string) {
		if cves[key] == nil {
			cves[key] = map[string]bool{}
		}
		cves[key][cve] = true
	}
	pairs, err := fixPairs(ctx, s.query, orgID, `eu.key IN `+in, args...)
	if err != nil {
		return 0, nil, err
	}
	for _, p := range pairs {
		add(p.Key, p.CVEID)
	}
	rows, err := s.query(ctx, `SELECT DISTINCT endpoint_id FROM endpoint_updates WHERE org_id = ? AND kb IS NOT NULL AND key IN `+in,
		append([]any{orgID}, args...)...)
	eps, err := scanRows(rows, err, scanString)
	if err != nil {
		return 0, nil, fmt.Errorf("store: update risk: %w", err)
	}
	if len(eps) > 0 {
		kb, err := kbFixPairs(ctx, s.query, orgID, anySlice(eps))
		if err != nil {
			return 0, nil, err
		}
		want := map[string]bool{}
		for _, k := range keys {
			want[k] = true
		}
		for _, p := range kb {
			if want[p.Key] {
				add(p.Key, p.CVEID)
			}
		}
	}
	all := map[string]bool{}
	for _, set := range cves {
		maps.Copy(all, set)
	}
	facts, err := s.CVEFacts(ctx, slices.Sorted(maps.Keys(all)))
	if err != nil {
		return 0, nil, err
	}
	type row struct {
		severity, vendor, top string
		kb, kev               bool
		count                 int
		cvss, epss            *float64
		risk                  float64
	}
	rows, err = s.query(ctx, `SELECT key, severity, COALESCE(vendor_severity, severity), kb IS NOT NULL, cve_count, kev, max_cvss, max_epss,
		COALESCE(top_cve, ''), risk FROM update_keys WHERE org_id = ? AND key IN `+in, append([]any{orgID}, args...)...)
	current := map[string]row{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var k string
		var x row
		var cvss, epss sql.NullFloat64
		if err := r.Scan(&k, &x.severity, &x.vendor, &x.kb, &x.count, &x.kev, &cvss, &epss, &x.top, &x.risk); err != nil {
			return err
		}
		x.cvss, x.epss = nullFloat(cvss), nullFloat(epss)
		current[k] = x
		return nil
	}); err != nil {
		return 0, nil, fmt.Errorf("store: update risk: %w", err)
	}
	n := 0
	var changed []string
	err = s.InTx(ctx, func(tx *Tx) error {
		n, changed = 0, nil
		for _, k := range keys {
			old, ok := current[k]
			if !ok {
				continue
			}
			var f vulns.Fixes
			for _, c := range slices.Sorted(maps.Keys(cves[k])) {
				fc, ok := facts[c]
				if !ok {
					fc = vulns.CVEFacts{ID: c}
				}
				f.Add(fc)
			}
			nw := row{severity: vulns.UpdateSeverity(old.vendor, old.kb, f), vendor: old.vendor, top: f.Top, kb: old.kb, kev: f.KEV,
				count: f.CVEs, cvss: f.MaxCVSS, epss: f.MaxEPSS, risk: f.Risk}
			if nw.severity == old.severity && nw.top == old.top && nw.kev == old.kev && nw.count == old.count && eqFloat(nw.cvss, old.cvss) &&
				eqFloat(nw.epss, old.epss) && nw.risk == old.risk {
				continue
			}
			var top *string
			if f.Top != "" {
				top = &f.Top
			}
			if _, err := tx.exec(ctx, `UPDATE update_keys SET severity = ?, vendor_severity = ?, cve_count = ?, kev = ?, max_cvss = ?, max_epss = ?,
				top_cve = ?, risk = ? WHERE org_id = ? AND key = ?`, nw.severity, nw.vendor, nw.count, nw.kev, nw.cvss, nw.epss, top, nw.risk, orgID, k); err != nil {
				return fmt.Errorf("store: update risk: %w", err)
			}
			n++
			if nw.severity != old.severity || nw.kev != old.kev {
				changed = append(changed, k)
			}
		}
		return nil
	})
	return n, changed, err
}

func eqFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// UpdateRisks answers the severity and risk of the organization's update
// keys, as RefreshUpdateRisk stored them; keys not found are left out.
func (s *Store) UpdateRisks(ctx context.Context, orgID string, keys []string) (map[string]apiv1.UpdateRisk, error) {
	return updateRisks(ctx, s.query, orgID, keys)
}

func updateRisks(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), orgID string, keys []string) (map[string]apiv1.UpdateRisk, error) {
	out := map[string]apiv1.UpdateRisk{}
	tops := map[string]bool{}
	for start := 0; start < len(keys); start += inChunk {
		part := anySlice(keys[start:min(start+inChunk, len(keys))])
		rows, err := query(ctx, `SELECT key, COALESCE(vendor_severity, severity), cve_count, kev, max_cvss, max_epss, top_cve, risk
			FROM update_keys WHERE org_id = ? AND key IN (`+placeholders(len(part))+`)`, append([]any{orgID}, part...)...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var k string
			var u apiv1.UpdateRisk
			var cvss, epss sql.NullFloat64
			var top sql.NullString
			if err := r.Scan(&k, &u.VendorSeverity, &u.CVECount, &u.KEV, &cvss, &epss, &top, &u.RiskScore); err != nil {
				return err
			}
			u.MaxCVSS, u.MaxEPSS, u.RiskCVE = nullFloat(cvss), nullFloat(epss), nullString(top)
			u.SeverityReason = vulns.SeverityReason(vulns.Fixes{CVEs: u.CVECount, KEV: u.KEV, MaxCVSS: u.MaxCVSS, MaxEPSS: u.MaxEPSS})
			if u.RiskCVE != nil {
				tops[*u.RiskCVE] = true
			}
			out[k] = u
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: update risks: %w", err)
		}
	}
	facts, err := cveFacts(ctx, query, slices.Sorted(maps.Keys(tops)))
	if err != nil {
		return nil, err
	}
	for k, u := range out {
		if u.RiskCVE != nil {
			f, ok := facts[*u.RiskCVE]
			if !ok {
				f = vulns.CVEFacts{ID: *u.RiskCVE}
			}
			u.RiskReason = *u.RiskCVE + ": " + f.RiskReason()
			out[k] = u
		}
	}
	return out, nil
}

// fillUpdateRisk fills the patchd additions of severity and risk of a page
// of missing updates.
func (r *ReadTx) fillUpdateRisk(ctx context.Context, orgID string, page []apiv1.Update) error {
	var keys []string
	seen := map[string]bool{}
	for _, u := range page {
		if !seen[u.Key] {
			seen[u.Key] = true
			keys = append(keys, u.Key)
		}
	}
	risks, err := updateRisks(ctx, r.query, orgID, keys)
	if err != nil {
		return err
	}
	for i := range page {
		page[i].UpdateRisk = risks[page[i].Key]
		if page[i].VendorSeverity == "" {
			page[i].VendorSeverity = page[i].Severity
		}
	}
	return nil
}

// EndpointRisk answers an endpoint's risk score: the highest risk of the
// CVEs found on it (0 without any), and how it is made ("CVE-2024-9680:
// CVSS 9.8 × 5 = 49 + …"; "" without a CVE).
func (s *Store) EndpointRisk(ctx context.Context, orgID, endpointID string) (float64, string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT cve_id FROM endpoint_vulns WHERE org_id = ? AND endpoint_id = ?`, orgID, endpointID)
	ids, err := scanRows(rows, err, scanString)
	if err != nil {
		return 0, "", fmt.Errorf("store: endpoint risk: %w", err)
	}
	slices.Sort(ids)
	facts, err := s.CVEFacts(ctx, ids)
	if err != nil {
		return 0, "", err
	}
	var f vulns.Fixes
	for _, id := range ids {
		c, ok := facts[id]
		if !ok {
			c = vulns.CVEFacts{ID: id}
		}
		f.Add(c)
	}
	if f.Top == "" {
		return 0, "", nil
	}
	top, ok := facts[f.Top]
	if !ok {
		top = vulns.CVEFacts{ID: f.Top}
	}
	return f.Risk, f.Top + ": " + top.RiskReason(), nil
}
