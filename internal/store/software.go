package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/patchd/patchd/apiv1"
)

// ReadTx is a read-only transaction: one consistent snapshot for queries
// that must agree with each other (a count and the page it bounds).
type ReadTx struct {
	s  *Store
	tx *sql.Tx
	// uncached are query texts not in the read cache yet: they are
	// prepared into it once the transaction gave its connection back.
	// Preparing them while it holds one would ask the pool for a second
	// connection, and transactions that each hold one and wait for another
	// never end once they hold them all.
	uncached []string
}

// stmt answers the transaction's form of the cached statement for q, or
// nil (the plain call serves it).
func (r *ReadTx) stmt(ctx context.Context, q string) *sql.Stmt {
	if st := r.s.readStmts.get(q); st != nil {
		return r.tx.StmtContext(ctx, st)
	}
	if r.s.readStmts.db != nil {
		r.uncached = append(r.uncached, q)
	}
	return nil
}

func (r *ReadTx) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.tx.QueryContext(ctx, r.s.q(q), args...)
}

func (r *ReadTx) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, r.s.q(q), args...)
}

// InReadTx runs fn in a read-only snapshot.
func (s *Store) InReadTx(ctx context.Context, fn func(r *ReadTx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.engine == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	db, sb := s.reader(ctx)
	tx, err := db.BeginTx(ctx, opts)
	if sb != nil && s.failedOn(sb, err) {
		tx, err = s.read.BeginTx(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("store: begin read: %w", err)
	}
	defer tx.Rollback() // fn panicked
	r := &ReadTx{s: s, tx: tx}
	err = fn(r)
	tx.Rollback()
	for _, q := range r.uncached {
		if s.readStmts.add(ctx, q) == nil {
			break
		}
	}
	return err
}

// countedKey is an entry of a catalog (software titles, update keys) with
// the number of rows it stands for, in list order.
type countedKey[K any] struct {
	key K
	n   int
}

// window finds the catalog entries that hold rows [offset, offset+limit) of
// the list they define, and the offset inside the first of them. Totals
// and deep pages thus cost a walk over the (small) catalog, not over rows.
func window[K any](entries []countedKey[K], offset int) (start int, local int, total int) {
	start = len(entries)
	for i, e := range entries {
		if start == len(entries) && total+e.n > offset {
			start, local = i, offset-total
		}
		total += e.n
	}
	return start, local, total
}

// SoftwareQuery filters the software list.
type SoftwareQuery struct {
	OrgID      string
	Q          string
	EndpointID string
	Limit      int
	Offset     int
}

const softwareColumns = `es.endpoint_id, COALESCE(e.display_name, e.hostname), t.name, NULLIF(es.version_key, ''), es.publisher, es.install_date,
	es.installed_for, es.install_type`

func scanSoftwareRow(rows rowScanner) (apiv1.SoftwareRow, error) {
	var r apiv1.SoftwareRow
	var version, publisher, installDate, installedFor, installType sql.NullString
	err := rows.Scan(&r.EndpointID, &r.Endpoint, &r.Name, &version, &publisher, &installDate, &installedFor, &installType)
	r.Version, r.Publisher, r.InstallDate = nullString(version), nullString(publisher), nullString(installDate)
	r.InstalledFor, r.InstallType = nullString(installedFor), nullString(installType)
	return r, err
}

// ListSoftware pages installed software, one row per endpoint × application,
// ordered by application name then endpoint.
func (s *Store) ListSoftware(ctx context.Context, q SoftwareQuery) ([]apiv1.SoftwareRow, int, error) {
	out := make([]apiv1.SoftwareRow, 0, q.Limit)
	total := 0
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		if q.EndpointID != "" {
			where := `e.org_id = ? AND es.endpoint_id = ?`
			args := []any{q.OrgID, q.EndpointID}
			if q.Q != "" {
				where += ` AND t.name_lower LIKE ? ESCAPE '\'`
				args = append(args, likePattern(q.Q))
			}
			const from = ` FROM endpoint_software es JOIN endpoints e ON e.id = es.endpoint_id JOIN software_titles t ON t.id = es.title_id WHERE `
			if err := r.queryRow(ctx, `SELECT COUNT(*)`+from+where, args...).Scan(&total); err != nil {
				return fmt.Errorf("store: count software: %w", err)
			}
			rows, err := r.query(ctx, `SELECT `+softwareColumns+from+where+` ORDER BY t.name_lower, es.title_id, es.version_key LIMIT ? OFFSET ?`,
				append(args, q.Limit, q.Offset)...)
			if err := appendRows(&out, rows, err, scanSoftwareRow); err != nil {
				return fmt.Errorf("store: list software: %w", err)
			}
			return nil
		}
		where := `org_id = ? AND installs > 0`
		args := []any{q.OrgID}
		if q.Q != "" {
			where += ` AND name_lower LIKE ? ESCAPE '\'`
			args = append(args, likePattern(q.Q))
		}
		rows, err := r.query(ctx, `SELECT id, installs FROM software_titles WHERE `+where+` ORDER BY name_lower, id`, args...)
		entries, err := scanRows(rows, err, func(r rowScanner) (countedKey[int64], error) {
			var e countedKey[int64]
			err := r.Scan(&e.key, &e.n)
			return e, err
		})
		if err != nil {
			return fmt.Errorf("store: software titles: %w", err)
		}
		start, local, sum := window(entries, q.Offset)
		total = sum
		for i := start; i < len(entries) && len(out) < q.Limit; i++ {
			rows, err := r.query(ctx, `SELECT `+softwareColumns+` FROM endpoint_software es JOIN endpoints e ON e.id = es.endpoint_id
				JOIN software_titles t ON t.id = es.title_id WHERE es.title_id = ? ORDER BY es.endpoint_id, es.version_key LIMIT ? OFFSET ?`,
				entries[i].key, q.Limit-len(out), local)
			if err := appendRows(&out, rows, err, scanSoftwareRow); err != nil {
				return fmt.Errorf("store: list software: %w", err)
			}
			local = 0
		}
		return nil
	})
	return out, total, err
}
