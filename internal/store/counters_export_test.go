package store

import (
	"context"
	"fmt"
)

// CounterMismatchesForTest compares every stored counter of an
// organization with a count of the rows it stands for, and answers one line
// for each that differs.
func (s *Store) CounterMismatchesForTest(ctx context.Context, orgID string) ([]string, error) {
	checks := []struct{ what, query string }{
		{"software title installs", `SELECT t.name, t.installs, (SELECT COUNT(*) FROM endpoint_software es WHERE es.title_id = t.id)
			FROM software_titles t WHERE t.org_id = ?`},
		{"software title hosts", `SELECT t.name, t.hosts, (SELECT COUNT(DISTINCT es.endpoint_id) FROM endpoint_software es WHERE es.title_id = t.id)
			FROM software_titles t WHERE t.org_id = ?`},
		{"software version hosts", `SELECT t.name || ' ' || v.version_key, v.hosts,
			(SELECT COUNT(*) FROM endpoint_software es WHERE es.title_id = v.title_id AND es.version_key = v.version_key)
			FROM software_versions v JOIN software_titles t ON t.id = v.title_id WHERE t.org_id = ?`},
		{"software version rows", `SELECT t.name || ' ' || es.version_key, COUNT(*), COALESCE(MAX(v.hosts), 0)
			FROM endpoint_software es JOIN software_titles t ON t.id = es.title_id
			LEFT JOIN software_versions v ON v.title_id = es.title_id AND v.version_key = es.version_key
			WHERE t.org_id = ? GROUP BY t.name, es.version_key`},
		{"update key endpoints", `SELECT k.key, k.endpoints, (SELECT COUNT(*) FROM endpoint_updates u WHERE u.org_id = k.org_id AND u.key = k.key)
			FROM update_keys k WHERE k.org_id = ?`},
		{"group members", `SELECT g.name, g.members, (SELECT COUNT(*) FROM group_members m WHERE m.group_id = g.id)
			FROM endpoint_groups g WHERE g.org_id = ? AND g.builtin IS NULL`},
		// Installations of endpoints that are gone (on PostgreSQL a trigger,
		// not a foreign key, removes them: migration 036): none.
		{"installations of deleted endpoints", `SELECT t.name, 0, COUNT(*) FROM endpoint_software es JOIN software_titles t ON t.id = es.title_id
			WHERE t.org_id = ? AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.id = es.endpoint_id) GROUP BY t.name`},
	}
	var out []string
	for _, c := range checks {
		rows, err := s.write.QueryContext(ctx, s.q(c.query), orgID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.what, err)
		}
		for rows.Next() {
			var name string
			var stored, counted int
			if err := rows.Scan(&name, &stored, &counted); err != nil {
				rows.Close()
				return nil, err
			}
			if stored != counted {
				out = append(out, fmt.Sprintf("%s of %q: stored %d, rows %d", c.what, name, stored, counted))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
