package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/inventory"
)

// BulkSoftwareForTest gives each endpoint perEndpoint applications out of a
// catalog of titles applications (endpoint i has titles (7i + 13j) mod
// titles), and marks their inventory collected at.
func (s *Store) BulkSoftwareForTest(ctx context.Context, orgID string, endpoints []string, titles, perEndpoint int, at time.Time) error {
	ids := make([]int64, titles)
	installs := make([]int, titles)
	err := s.InTx(ctx, func(tx *Tx) error {
		for i := range ids {
			name := fmt.Sprintf("Application %04d", i)
			if err := tx.queryRow(ctx, `INSERT INTO software_titles (org_id, name, name_lower) VALUES (?, ?, lower(?)) RETURNING id`,
				orgID, name, name).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	b := &batchInsert{s: s, table: "endpoint_software", columns: []string{"endpoint_id", "title_id", "version_key", "publisher", "install_date", "install_type"}, batch: 20000}
	for i, ep := range endpoints {
		for j := range perEndpoint {
			t := (7*i + 13*j) % titles
			installs[t]++
			b.rows = append(b.rows, []any{ep, ids[t], fmt.Sprintf("%d.%d.%d", t%30, j%10, i%100), fmt.Sprintf("Publisher %03d", t%200), "2026-03-01", "MSI"})
		}
		if err := b.flushFull(ctx); err != nil {
			return err
		}
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return s.InTx(ctx, func(tx *Tx) error {
		for i, id := range ids {
			if _, err := tx.exec(ctx, `UPDATE software_titles SET installs = ? WHERE id = ?`, installs[i], id); err != nil {
				return err
			}
		}
		if _, err := tx.exec(ctx, `UPDATE endpoints SET inventory_at = ? WHERE org_id = ?`, millis(at), orgID); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `UPDATE endpoint_presence SET last_seen_at = ?
			WHERE endpoint_id IN (SELECT id FROM endpoints WHERE org_id = ?)`, millis(at), orgID); err != nil {
			return err
		}
		return tx.recountTitlesForTest(ctx, orgID)
	})
}

// recountTitlesForTest sets the organization's title host counts,
// publishers and version counts from the rows, as migration 019 does.
func (tx *Tx) recountTitlesForTest(ctx context.Context, orgID string) error {
	if _, err := tx.exec(ctx, `UPDATE software_titles SET
		hosts = (SELECT COUNT(DISTINCT es.endpoint_id) FROM endpoint_software es WHERE es.title_id = software_titles.id),
		publisher = (SELECT MIN(es.publisher) FROM endpoint_software es WHERE es.title_id = software_titles.id AND es.publisher <> '')
		WHERE org_id = ?`, orgID); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM software_versions WHERE title_id IN (SELECT id FROM software_titles WHERE org_id = ?)`, orgID); err != nil {
		return err
	}
	_, err := tx.exec(ctx, `INSERT INTO software_versions (title_id, version_key, hosts)
		SELECT es.title_id, es.version_key, COUNT(*) FROM endpoint_software es JOIN software_titles t ON t.id = es.title_id
		WHERE t.org_id = ? GROUP BY es.title_id, es.version_key`, orgID)
	return err
}

// BulkDatasetsForTest stores, for endpoint i, the datasets sets[i%len(sets)].
func (s *Store) BulkDatasetsForTest(ctx context.Context, orgID string, endpoints []string, sets []map[string][]map[string]any, at time.Time) error {
	compressed := make([][]compressedDataset, len(sets))
	for i, set := range sets {
		var ds []inventory.Dataset
		for name, rows := range set {
			b, err := json.Marshal(rows)
			if err != nil {
				return err
			}
			ds = append(ds, inventory.Dataset{Name: name, JSON: b, Rows: len(rows)})
		}
		var err error
		if compressed[i], err = compressDatasets(ds); err != nil {
			return err
		}
	}
	b := &batchInsert{s: s, table: "endpoint_datasets", columns: []string{"endpoint_id", "org_id", "name", "rows_gz", "row_count", "collected_at"}, batch: 5000}
	for i, ep := range endpoints {
		for _, d := range compressed[i%len(compressed)] {
			b.rows = append(b.rows, []any{ep, orgID, d.name, d.blob, d.count, millis(at)})
		}
		if err := b.flushFull(ctx); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

// SoftwareTestRow is one application of an endpoint for SoftwareForTest;
// nil fields are NULL.
type SoftwareTestRow struct {
	Endpoint, Title, Version                          string
	Publisher, InstallDate, InstalledFor, InstallType *string
}

// SoftwareForTest stores rows as they are (titles created as needed, their
// install counts and the endpoints' inventory time set), for tests of the
// software report sources.
func (s *Store) SoftwareForTest(ctx context.Context, orgID string, rows []SoftwareTestRow, at time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		ids := map[string]int64{}
		for _, r := range rows {
			id, ok := ids[r.Title]
			if !ok {
				if err := tx.queryRow(ctx, `INSERT INTO software_titles (org_id, name, name_lower) VALUES (?, ?, lower(?)) RETURNING id`,
					orgID, r.Title, r.Title).Scan(&id); err != nil {
					return err
				}
				ids[r.Title] = id
			}
			if _, err := tx.exec(ctx, `INSERT INTO endpoint_software (endpoint_id, title_id, version_key, publisher, install_date, installed_for, install_type)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, r.Endpoint, id, r.Version, r.Publisher, r.InstallDate, r.InstalledFor, r.InstallType); err != nil {
				return err
			}
			if _, err := tx.exec(ctx, `UPDATE software_titles SET installs = installs + 1 WHERE id = ?`, id); err != nil {
				return err
			}
		}
		if _, err := tx.exec(ctx, `UPDATE endpoints SET inventory_at = ? WHERE org_id = ?`, millis(at), orgID); err != nil {
			return err
		}
		return tx.recountTitlesForTest(ctx, orgID)
	})
}
