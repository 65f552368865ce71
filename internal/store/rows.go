package store

import (
	"database/sql"
	"errors"
)

// eachRow calls fn for every row of a query's result and closes it. It
// answers the query's error, fn's first error, or the error that ended the
// iteration (rows.Err): a result cut short by a failure midway (a broken
// connection, a value the database cannot compute) is never taken for the
// whole. Every loop over rows in the store goes through it or scanRows:
//
//	rows, err := s.query(ctx, `SELECT …`, args...)
//	err = eachRow(rows, err, func(r *sql.Rows) error { … r.Scan(…) … })
//
// fn answers errStopRows to end the iteration early (a search that found
// what it looked for, an iterator whose consumer stopped): eachRow then
// answers nil.
func eachRow(rows *sql.Rows, err error, fn func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			if err == errStopRows {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// errStopRows, answered by eachRow's fn, ends the iteration without an error.
var errStopRows = errors.New("store: stop reading rows")

// scanRows is eachRow collecting one value per row; the slice is never nil
// (an empty list encodes as [] in JSON).
func scanRows[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	out := make([]T, 0)
	err = eachRow(rows, err, func(r *sql.Rows) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanString scans a row of one text column.
func scanString(r *sql.Rows) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}
