package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
	return s.updateFixes(ctx, orgID, `ev.cve_id = ?`, cveID)
}

// FixedCVEs answers the CVEs the update of key fixes on the organization's
// endpoints that miss it, most endpoints first.
func (s *Store) FixedCVEs(ctx context.Context, orgID, key string) ([]UpdateFix, error) {
	return s.updateFixes(ctx, orgID, `eu.key = ?`, key)
}

// updateFixes pairs an endpoint's CVE findings with its missing updates
// that fix them: the Microsoft KB of a Windows finding, the update of the
// vulnerable Linux package or application (by package name, or by title
// for an application) whose latest version reaches the fixed version.
func (s *Store) updateFixes(ctx context.Context, orgID, cond string, arg string) ([]UpdateFix, error) {
	rows, err := s.query(ctx, `SELECT eu.key, eu.title, COALESCE(eu.kb, ''), eu.severity, ev.cve_id, ev.endpoint_id, ev.source,
		COALESCE(ev.fixed_in, ''), COALESCE(eu.latest_version, ''), e.platform, COALESCE(e.os, '')
		FROM endpoint_vulns ev JOIN endpoints e ON e.id = ev.endpoint_id
		JOIN endpoint_updates eu ON eu.org_id = ev.org_id AND eu.endpoint_id = ev.endpoint_id
			AND (eu.kb = ev.source OR eu.package_name = ev.software OR lower(eu.title) = lower(ev.software))
		WHERE ev.org_id = ? AND `+cond, orgID, arg)
	if err != nil {
		return nil, fmt.Errorf("store: fixing updates: %w", err)
	}
	defer rows.Close()
	type pair struct{ key, cve string }
	fixes := map[pair]*UpdateFix{}
	seen := map[[3]string]bool{}
	for rows.Next() {
		var f UpdateFix
		var endpoint, source, fixedIn, latest, platform, osName string
		if err := rows.Scan(&f.Key, &f.Title, &f.KB, &f.Severity, &f.CVEID, &endpoint, &source, &fixedIn, &latest, &platform, &osName); err != nil {
			return nil, fmt.Errorf("store: fixing updates: %w", err)
		}
		if !isKB(source) || f.KB != source {
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
				continue
			}
		}
		k := pair{f.Key, f.CVEID}
		if seen[[3]string{f.Key, f.CVEID, endpoint}] {
			continue
		}
		seen[[3]string{f.Key, f.CVEID, endpoint}] = true
		if fixes[k] == nil {
			f.Endpoints = 0
			fixes[k] = &f
		}
		fixes[k].Endpoints++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: fixing updates: %w", err)
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

// EndpointUpdateKeys answers the update key of each of an endpoint's
// missing updates, by the missing update's id.
func (s *Store) EndpointUpdateKeys(ctx context.Context, orgID, endpointID string) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT id, key FROM endpoint_updates WHERE org_id = ? AND endpoint_id = ?`, orgID, endpointID)
	if err != nil {
		return nil, fmt.Errorf("store: endpoint update keys: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, fmt.Errorf("store: endpoint update keys: %w", err)
		}
		out[id] = key
	}
	return out, rows.Err()
}
