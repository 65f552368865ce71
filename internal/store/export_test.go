package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/inventory"
)

// Bulk loaders for the performance tests: they write rows as the store's
// own code would leave them, without the cost of one transaction per
// inventory, so that a million rows load in a minute.

// BulkEndpointsForTest inserts n endpoints named host-000000 … of an
// organization and answers their ids.
func (s *Store) BulkEndpointsForTest(ctx context.Context, orgID string, n int, enrolledAt time.Time) ([]string, error) {
	ids := make([]string, n)
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		rows := make([][]any, 0, end-start)
		for i := start; i < end; i++ {
			ids[i] = NewID()
			host := fmt.Sprintf("host-%06d", i)
			platform := []string{"windows", "linux", "macos"}[i%3]
			rows = append(rows, []any{ids[i], orgID, "uid-" + ids[i], "secret-" + ids[i], host, host, platform, "Test OS", millis(enrolledAt),
				fmt.Sprintf(`["10.%d.%d.%d"]`, i/65536%256, i/256%256, i%256), fmt.Sprintf(`{"attr1":"dept-%d"}`, i%10)})
		}
		presence := make([][]any, 0, end-start)
		for _, id := range ids[start:end] {
			presence = append(presence, []any{id})
		}
		err := s.InTx(ctx, func(tx *Tx) error {
			if err := tx.insertRows(ctx, "endpoints", []string{"id", "org_id", "machine_uid", "secret_hash", "hostname", "sort_name", "platform", "os",
				"enrolled_at", "ip_addresses", "attributes"}, rows); err != nil {
				return err
			}
			// Never seen (last_seen_at NULL), connected as enrollment leaves it.
			return tx.insertRows(ctx, "endpoint_presence", []string{"endpoint_id"}, presence)
		})
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// BulkKey is a key of the catalog for BulkUpdatesForTest.
type BulkKey struct{ Key, Severity, Source string }

// batchInsert writes rows into a table in transactions of about batch
// rows each.
type batchInsert struct {
	s       *Store
	table   string
	columns []string
	batch   int
	rows    [][]any
}

// flushFull writes the rows queued once they are batch or more.
func (b *batchInsert) flushFull(ctx context.Context) error {
	if len(b.rows) < b.batch {
		return nil
	}
	return b.flush(ctx)
}

// flush writes the rows queued, if any.
func (b *batchInsert) flush(ctx context.Context) error {
	if len(b.rows) == 0 {
		return nil
	}
	err := b.s.InTx(ctx, func(tx *Tx) error {
		return tx.insertRows(ctx, b.table, b.columns, b.rows)
	})
	b.rows = b.rows[:0]
	return err
}

// BulkUpdatesForTest makes each endpoint miss the keys keysOf answers, and
// fills the key catalog with exact endpoint counts.
func (s *Store) BulkUpdatesForTest(ctx context.Context, orgID string, endpoints []string, keys []BulkKey, keysOf func(i int) []int, now time.Time) error {
	counts := make([]int, len(keys))
	b := &batchInsert{s: s, table: "endpoint_updates", columns: []string{"id", "org_id", "endpoint_id", "key", "title", "kb", "severity", "source",
		"installed_version", "latest_version", "detected_at"}, batch: 20000}
	for i, ep := range endpoints {
		for _, k := range keysOf(i) {
			counts[k]++
			key := keys[k]
			var kb any
			if strings.HasPrefix(key.Key, "KB") {
				kb = key.Key
			}
			b.rows = append(b.rows, []any{NewID(), orgID, ep, key.Key, "Update " + key.Key, kb, key.Severity, key.Source, "1.0", "2.0", millis(now)})
		}
		if err := b.flushFull(ctx); err != nil {
			return err
		}
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	// The endpoints' counters, as migration 030 computes them.
	if _, err := s.exec(ctx, `UPDATE endpoints SET
		missing_critical = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Critical'),
		missing_important = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Important'),
		missing_moderate = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Moderate'),
		missing_low = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Low'),
		missing_unspecified = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id
			AND u.severity NOT IN ('Critical', 'Important', 'Moderate', 'Low'))
		WHERE org_id = ?`, orgID); err != nil {
		return err
	}
	return s.InTx(ctx, func(tx *Tx) error {
		krows := make([][]any, len(keys))
		for i, k := range keys {
			krows[i] = []any{orgID, k.Key, "Update " + k.Key, k.Severity, k.Source, millis(now), counts[i]}
		}
		return tx.insertRows(ctx, "update_keys", []string{"org_id", "key", "title", "severity", "source", "first_seen_at", "endpoints"}, krows)
	})
}

// AnalyzeForTest refreshes the planner statistics after a bulk load, as
// autovacuum (PostgreSQL) or ANALYZE would on a live database.
func (s *Store) AnalyzeForTest(ctx context.Context) error {
	_, err := s.exec(ctx, `ANALYZE`)
	return err
}

// GroupRuleForTest is a rule of GroupChangeForTest.
type GroupRuleForTest = groups.Rule

// GroupChangeForTest makes the change that creates a dynamic group.
func GroupChangeForTest(name string, matchAll bool, rules []groups.Rule) GroupChange {
	return GroupChange{Name: &name, MatchAll: &matchAll, Rules: &rules}
}

// SetCheckinFaultForTest makes RecordCheckins fail the check-ins f answers
// an error for, inside the transaction, as the database refusing their
// data would.
func (s *Store) SetCheckinFaultForTest(f func(Checkin) error) { s.checkinFault = f }

// IngestForTest writes the inventories as one batch of the ingester, as
// if they had arrived together, and answers each one's outcome.
func (g *Ingester) IngestForTest(orgID string, endpointIDs []string, ns []inventory.Normalized, now time.Time) []error {
	batch := make([]*ingestReq, len(ns))
	for i, n := range ns {
		inv, err := prepareInventory(orgID, endpointIDs[i], n, "hash", now)
		if err != nil {
			panic(err)
		}
		batch[i] = &ingestReq{inv: inv, err: make(chan error, 1)}
	}
	g.write(batch)
	out := make([]error, len(batch))
	for i, r := range batch {
		out[i] = <-r.err
	}
	return out
}

// ForgetRebootsForTest empties the reboot tracker's table, so that its next
// pass inserts (and checks the foreign keys of) every pending endpoint again.
func (s *Store) ForgetRebootsForTest(ctx context.Context) error {
	_, err := s.exec(ctx, `DELETE FROM alert_reboots`)
	return err
}

// TrackedRebootsForTest counts the endpoints the reboot tracker recorded.
func (s *Store) TrackedRebootsForTest(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM alert_reboots`).Scan(&n)
	return n, err
}

// KeyShareForTest holds, on PostgreSQL, the key-share lock a foreign-key
// check takes on the endpoint's row, in a transaction of its own, from when
// held is closed until release is: as the reboot tracker does while it runs.
func (s *Store) KeyShareForTest(ctx context.Context, endpointID string, held chan<- struct{}, release <-chan struct{}) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var id string
		if err := tx.queryRow(ctx, `SELECT id FROM endpoints WHERE id = ? FOR KEY SHARE`, endpointID).Scan(&id); err != nil {
			return err
		}
		close(held)
		<-release
		return nil
	})
}

// UndoMigration019ForTest takes the database back to before migration 019
// (the software title counters), so that a test can apply it to rows that
// exist, as an upgrade does (on PostgreSQL, migration 037 dropped the
// hosts indexes already).
func (s *Store) UndoMigration019ForTest(ctx context.Context) error {
	return s.InTx(ctx, func(tx *Tx) error {
		for _, q := range []string{
			`DROP INDEX IF EXISTS software_titles_hosts`,
			`DROP INDEX IF EXISTS software_versions_hosts`,
			`DROP TABLE software_versions`,
			`ALTER TABLE software_titles DROP COLUMN hosts`,
			`ALTER TABLE software_titles DROP COLUMN publisher`,
			`DELETE FROM schema_migrations WHERE version = 19`,
		} {
			if _, err := tx.exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// BulkVulnsForTest records cves CVEs on the organization's fleet (CVSS
// spread from 2.0 to 9.9, first detected days ago) and makes endpoint i
// affected by the CVEs cvesOf(i) answers, as the matcher would.
func (s *Store) BulkVulnsForTest(ctx context.Context, orgID string, endpoints []string, cves int, cvesOf func(i int) []int, now time.Time) error {
	id := func(k int) string { return fmt.Sprintf("CVE-2026-%05d", 10000+k) }
	counts := make([]int, cves)
	b := &batchInsert{s: s, table: "endpoint_vulns", columns: []string{"org_id", "endpoint_id", "cve_id", "software", "version", "fixed_in", "source", "first_seen_at"}, batch: 20000}
	for i, ep := range endpoints {
		for _, k := range cvesOf(i) {
			counts[k]++
			b.rows = append(b.rows, []any{orgID, ep, id(k), fmt.Sprintf("App %d", k%50), "1.0", "2.0", "vendor:app", millis(now)})
		}
		if err := b.flushFull(ctx); err != nil {
			return err
		}
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return s.InTx(ctx, func(tx *Tx) error {
		crows, orows := make([][]any, cves), make([][]any, cves)
		for k := range cves {
			score := 2.0 + float64(k%80)/10
			crows[k] = []any{id(k), millis(now.AddDate(-1, 0, 0)), "Generated CVE " + id(k), score}
			orows[k] = []any{orgID, id(k), counts[k], millis(now.AddDate(0, 0, -(k % 120))), millis(now)}
		}
		if err := tx.insertRows(ctx, "vuln_cves", []string{"id", "published", "description", "cvss"}, crows); err != nil {
			return err
		}
		return tx.insertRows(ctx, "org_vulns", []string{"org_id", "cve_id", "endpoints_count", "first_detected_at", "last_detected_at"}, orows)
	})
}

// WalFramesLeftForTest reads the frames of an SQLite log not yet copied
// from its -shm file, as the background checkpointer does.
var WalFramesLeftForTest = walFramesLeft

// UndoMigration038ForTest takes the database back to before migration 038:
// the presence columns back in the endpoints rows, with their values, and
// no endpoint_presence table, so that a test can apply it to rows that
// exist, as an upgrade does.
func (s *Store) UndoMigration038ForTest(ctx context.Context) error {
	return s.InTx(ctx, func(tx *Tx) error {
		for _, q := range []string{
			`ALTER TABLE endpoints ADD COLUMN last_seen_at BIGINT`,
			`ALTER TABLE endpoints ADD COLUMN status TEXT NOT NULL DEFAULT 'connected'`,
			`ALTER TABLE endpoints ADD COLUMN status_changed_at BIGINT`,
			`UPDATE endpoints SET last_seen_at = (SELECT p.last_seen_at FROM endpoint_presence p WHERE p.endpoint_id = endpoints.id),
				status = (SELECT p.status FROM endpoint_presence p WHERE p.endpoint_id = endpoints.id),
				status_changed_at = (SELECT p.status_changed_at FROM endpoint_presence p WHERE p.endpoint_id = endpoints.id)`,
			`DROP TABLE endpoint_presence`,
			`DELETE FROM schema_migrations WHERE version = 38`,
			// 058 added a column to the table dropped here: applied again after 038.
			`DELETE FROM schema_migrations WHERE version = 58`,
		} {
			if _, err := tx.exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// SharedWaitingForTest answers how many requests wait for a shared
// transaction (inSharedTx): queued, or in the one being written.
func (s *Store) SharedWaitingForTest() int {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return len(s.shared.queue) + s.shared.inFlight
}

// CheckinsToReadForTest answers how many of batch's endpoint rows a flush
// would read before writing (SQLite skips those known to hold what their
// check-in would write: checkinFacts).
func (s *Store) CheckinsToReadForTest(batch []Checkin) int {
	return len(s.facts.toRead(batch, time.Now()))
}

// ExecForTest runs a statement in the transaction as the store's writers
// do (tx.exec).
func (t *Tx) ExecForTest(ctx context.Context, query string, args ...any) error {
	_, err := t.exec(ctx, query, args...)
	return err
}

// WriteStmtCachedForTest tells whether the writer's statement cache holds
// query.
func (s *Store) WriteStmtCachedForTest(query string) bool { return s.writeStmts.get(query) != nil }

// FillWriteStmtsForTest makes the writer's statement cache count as full.
func (s *Store) FillWriteStmtsForTest() { s.writeStmts.n.Store(maxStmts) }

// StatementChunksForTest answers the sizes of the chunks multi-row
// statements write n rows in.
func StatementChunksForTest(n int) []int {
	var sizes []int
	for c := range statementChunks(make([]struct{}, n)) {
		sizes = append(sizes, len(c))
	}
	return sizes
}

// PlanAnalysesForTest waits for the planner statistics' analysis under way,
// if any, and answers how many have run (0 on SQLite).
func (s *Store) PlanAnalysesForTest() int {
	p := s.planStats
	if p == nil {
		return 0
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.analyzes
}

// UndoMigration040ForTest takes the database back to before migration 040:
// on SQLite endpoint_software with its foreign keys again and no cascade
// trigger (on PostgreSQL the migration changes nothing), so that a test can
// apply it to rows that exist, as an upgrade does.
func (s *Store) UndoMigration040ForTest(ctx context.Context) error {
	return s.InTx(ctx, func(tx *Tx) error {
		qs := []string{`DELETE FROM schema_migrations WHERE version = 40`}
		if s.engine == SQLite {
			qs = append(qs,
				`DROP TRIGGER IF EXISTS endpoints_software_cascade`,
				`CREATE TABLE endpoint_software_old (
					endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
					title_id BIGINT NOT NULL REFERENCES software_titles(id),
					version_key TEXT NOT NULL, publisher TEXT, install_date TEXT, installed_for TEXT, install_type TEXT, source_package TEXT,
					PRIMARY KEY (endpoint_id, title_id, version_key)) WITHOUT ROWID`,
				`INSERT INTO endpoint_software_old SELECT * FROM endpoint_software`,
				`DROP TABLE endpoint_software`,
				`ALTER TABLE endpoint_software_old RENAME TO endpoint_software`,
				`CREATE INDEX endpoint_software_title ON endpoint_software
					(title_id, endpoint_id, version_key, publisher, install_date, installed_for, install_type)`)
		}
		for _, q := range qs {
			if _, err := tx.exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// QueryStringsForTest runs a query of one text column through scanRows.
func (s *Store) QueryStringsForTest(ctx context.Context, query string) ([]string, error) {
	rows, err := s.query(ctx, query)
	return scanRows(rows, err, scanString)
}

// FirstStringsForTest reads the first n rows of a query of one text column
// through eachRow, stopping there with errStopRows.
func (s *Store) FirstStringsForTest(ctx context.Context, query string, n int) ([]string, error) {
	rows, err := s.query(ctx, query)
	var out []string
	err = eachRow(rows, err, func(r *sql.Rows) error {
		v, err := scanString(r)
		if err != nil {
			return err
		}
		if out = append(out, v); len(out) == n {
			return errStopRows
		}
		return nil
	})
	return out, err
}

// UndoMigration055ForTest takes the database back to before migration 055
// (memberships): every account of one organization, as before.
func (s *Store) UndoMigration055ForTest(ctx context.Context) error {
	return s.InTx(ctx, func(tx *Tx) error {
		for _, q := range []string{
			`DROP TABLE memberships`,
			`ALTER TABLE users DROP COLUMN last_org_id`,
			`DELETE FROM schema_migrations WHERE version = 55`,
		} {
			if _, err := tx.exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}
