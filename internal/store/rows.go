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
func scanRows[T any](rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	out := make([]T, 0)
	if err := appendRows(&out, rows, err, scan); err != nil {
		return nil, err
	}
	return out, nil
}

// appendRows is eachRow appending one value per row to *dst (a page that
// several queries fill in turn).
func appendRows[T any](dst *[]T, rows *sql.Rows, err error, scan func(rowScanner) (T, error)) error {
	return eachRow(rows, err, func(r *sql.Rows) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		*dst = append(*dst, v)
		return nil
	})
}

// rowScanner is what a scan function reads a row through: a *sql.Rows
// inside scanRows, a *sql.Row for a single-row query.
type rowScanner = interface{ Scan(...any) error }

// scanString scans a row of one text column.
func scanString(r rowScanner) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}

// addToSet adds to set the value of every row of rows, of one text column
// (err the query's, as for eachRow).
func addToSet(set map[string]bool, rows *sql.Rows, err error) error {
	return eachRow(rows, err, func(r *sql.Rows) error {
		id, err := scanString(r)
		if err == nil {
			set[id] = true
		}
		return err
	})
}

// scanStringArg scans a row of one text column as an argument of a later
// query.
func scanStringArg(r rowScanner) (any, error) {
	return scanString(r)
}
