package store

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// rowFault tells whether err is the database refusing the data of a row (a
// value it cannot store, a constraint, a value too large) rather than the
// database failing (unreachable, a conflict, shutting down). A batch writer
// that meets it writes the batch again in parts, so that the bad row fails
// alone instead of failing everyone's writes.
func rowFault(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case len(pg.Code) != 5:
			return false
		case pg.Code[:2] == "22", // data exception: NUL or bad encoding in text, a number out of range
			pg.Code[:2] == "23", // integrity constraint violation
			pg.Code[:2] == "54": // program limit exceeded: a value too large
			return true
		}
		return false
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case 18, 19, 20: // SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH
			return true
		}
	}
	return false
}

// foreignKeyFault tells whether err is the database refusing a row whose
// foreign key names a row that does not exist (deleted meanwhile).
func foreignKeyFault(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23503" // foreign_key_violation
	}
	var lite *sqlite.Error
	return errors.As(err, &lite) && lite.Code() == 787 // SQLITE_CONSTRAINT_FOREIGNKEY
}
