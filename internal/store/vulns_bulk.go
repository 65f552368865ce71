package store

import (
	"context"
	"fmt"
	"strings"
)

// rowSet is a set of rows that one statement writes or matches against, as
// the common table expression v: on PostgreSQL the rows go as column arrays
// through unnest (one statement, one round trip, whatever the number of
// rows); on SQLite as multi-row VALUES lists of at most sqliteBulkVars
// variables each. The matcher's difference of a batch of 500 endpoints is
// written with a handful of statements this way instead of one per row.
type rowSet struct {
	// columns names v's columns; types are their PostgreSQL array element
	// types ("text" or "bigint").
	columns, types []string
	rows           [][]any
}

// sqliteBulkVars bounds the variables of one SQLite statement (SQLite
// allows 32,766).
const sqliteBulkVars = 4000

// execEach runs stmt, which reads the rows from "v", for every chunk of
// the set, and answers the number of rows affected.
func (tx *Tx) execEach(ctx context.Context, set rowSet, stmt string) (int64, error) {
	if len(set.rows) == 0 {
		return 0, nil
	}
	cte := "WITH v (" + strings.Join(set.columns, ", ") + ") AS ("
	if tx.s.engine == Postgres {
		arrays, err := columnArrays(set)
		if err != nil {
			return 0, err
		}
		var b strings.Builder
		b.WriteString(cte + "SELECT * FROM unnest(")
		for i, t := range set.types {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?::" + t + "[]")
		}
		b.WriteString(")) " + stmt)
		res, err := tx.exec(ctx, b.String(), arrays...)
		if err != nil {
			return 0, err
		}
		n, _ := res.RowsAffected()
		return n, nil
	}
	per := max(1, sqliteBulkVars/len(set.columns))
	one := "(" + placeholders(len(set.columns)) + ")"
	var total int64
	for start := 0; start < len(set.rows); start += per {
		end := min(start+per, len(set.rows))
		var b strings.Builder
		b.WriteString(cte + "VALUES ")
		args := make([]any, 0, (end-start)*len(set.columns))
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, set.rows[i]...)
		}
		b.WriteString(") " + stmt)
		res, err := tx.exec(ctx, b.String(), args...)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// setWrite is one statement of a bulk write; stmt reads its rows from the
// set named v.
type setWrite struct {
	set  rowSet
	stmt func(v string) string
}

// writeSets runs the statements of a bulk write, those with rows only: on
// SQLite one after the other (execEach); on PostgreSQL as one statement of
// data-modifying WITH queries, one round trip for the whole write. They
// must touch disjoint rows: on PostgreSQL they see the same snapshot.
func (tx *Tx) writeSets(ctx context.Context, writes []setWrite) error {
	if tx.s.engine != Postgres {
		for _, w := range writes {
			if _, err := tx.execEach(ctx, w.set, w.stmt("v")); err != nil {
				return fmt.Errorf("store: write match results: %w", err)
			}
		}
		return nil
	}
	var b strings.Builder
	var args []any
	for i, w := range writes {
		if len(w.set.rows) == 0 {
			continue
		}
		arrays, err := columnArrays(w.set)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		v := fmt.Sprintf("v%d", i)
		fmt.Fprintf(&b, "%s (%s) AS (SELECT * FROM unnest(", v, strings.Join(w.set.columns, ", "))
		for j, t := range w.set.types {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("?::" + t + "[]")
		}
		fmt.Fprintf(&b, ")), w%d AS (%s)", i, w.stmt(v))
		args = append(args, arrays...)
	}
	if len(args) == 0 {
		return nil
	}
	b.WriteString(" SELECT 1")
	if _, err := tx.exec(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("store: write match results: %w", err)
	}
	return nil
}

// columnArrays turns the rows into one typed array per column (nil values
// as NULL elements).
func columnArrays(set rowSet) ([]any, error) {
	out := make([]any, len(set.columns))
	for c, t := range set.types {
		switch t {
		case "text":
			col := make([]*string, len(set.rows))
			for r, row := range set.rows {
				switch v := row[c].(type) {
				case nil:
				case string:
					col[r] = &v
				default:
					return nil, fmt.Errorf("store: bulk column %s: %T is not text", set.columns[c], row[c])
				}
			}
			out[c] = col
		case "bigint":
			col := make([]*int64, len(set.rows))
			for r, row := range set.rows {
				switch v := row[c].(type) {
				case nil:
				case int64:
					col[r] = &v
				case int:
					n := int64(v)
					col[r] = &n
				default:
					return nil, fmt.Errorf("store: bulk column %s: %T is not bigint", set.columns[c], row[c])
				}
			}
			out[c] = col
		default:
			return nil, fmt.Errorf("store: bulk column %s: unknown type %s", set.columns[c], t)
		}
	}
	return out, nil
}

// asyncCommit lets PostgreSQL commit the transaction without waiting for
// its WAL to reach the disk (synchronous_commit off, for this transaction
// only). For the matcher's results, which are derived data: a database
// crash can lose the last fraction of a second of commits, and a lost
// commit loses its results and the clearing of its dirty marks together,
// so the endpoints are matched again. A later synchronous commit (the
// matched feed version) flushes the earlier ones first, so it never
// survives without them. Per endpoint, the wait for the disk was most of
// a pass on a busy machine.
func (tx *Tx) asyncCommit(ctx context.Context) error {
	if tx.s.engine != Postgres {
		return nil
	}
	if _, err := tx.exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return fmt.Errorf("store: asynchronous commit: %w", err)
	}
	return nil
}
