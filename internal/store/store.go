// Package store owns patchd's persistent state: one schema on two engines,
// SQLite (the embedded default) and PostgreSQL (for several replicas). The SQL
// is written by hand in a file per domain; queries use '?' placeholders and
// the dialect rewrites them for PostgreSQL. Times are stored as Unix
// milliseconds (BIGINT) on both engines, JSON as text.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
)

// Errors every store method may answer; callers test them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Engine names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Store is the database. With SQLite, writes go through one connection and
// reads through a pool; with PostgreSQL both share one pool.
type Store struct {
	engine string
	url    string // the PostgreSQL URL, for LISTEN connections
	read   *sql.DB
	write  *sql.DB
	rebind sync.Map // query text -> PostgreSQL text
	// readStmts holds SQLite read statements by query text (at most
	// maxReadStmts): database/sql prepares each once per connection of the
	// read pool and reuses it, where a plain query is parsed again on
	// every call (a third of the CPU of GET /api/v1/groups).
	readStmts sync.Map // query text -> *sql.Stmt
	readN     atomic.Int32
	// groupsGen counts this store's committed changes to groups and their
	// members; groupLists caches ListGroups answers against it.
	groupsGen  atomic.Uint64
	groupLists sync.Map // organization id -> *groupList
	// checkinFault, set by tests, fails the check-ins it answers an error
	// for, as the database refusing their data would.
	checkinFault func(Checkin) error
	// health remembers how writes went, for readiness (Writable).
	health writeHealth
	// checkpoints copies a SQLite file's log in the background (nil on
	// PostgreSQL and for a database in memory).
	checkpoints *checkpointer
	// localMarks are the presence watermarks of this process's replicas
	// that keep theirs in memory (see KeepPresenceLocal).
	localMarks localMarks
	// shared queues the SQLite write transactions that run together
	// (inSharedTx).
	shared sharedTx
	// facts remembers the check-ins endpoint rows were written with (SQLite;
	// nil on PostgreSQL).
	facts *checkinFacts
}

// maxReadStmts bounds the read statement cache; queries whose text varies
// with their arguments (IN lists) beyond it are parsed each time.
const maxReadStmts = 256

// readStmt answers the cached read statement for query, or nil on
// PostgreSQL (pgx caches prepared statements itself) or when the cache is
// full or the statement does not prepare (the plain call reports that).
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	if s.engine != SQLite {
		return nil
	}
	if v, ok := s.readStmts.Load(query); ok {
		return v.(*sql.Stmt)
	}
	if s.readN.Load() >= maxReadStmts {
		return nil
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if v, loaded := s.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return v.(*sql.Stmt)
	}
	s.readN.Add(1)
	return st
}

// Options tunes Open.
type Options struct {
	// MaxConns bounds the PostgreSQL pool and the SQLite read pool.
	MaxConns int
	// SkipMigrate opens without applying migrations.
	SkipMigrate bool
}

// Open opens the database named by url: a postgres:// or postgresql:// URL,
// or a SQLite file path (with or without a "sqlite:" prefix). When url is
// empty the SQLite file patchd.db in dataDir is used. Migrations are applied.
func Open(ctx context.Context, url, dataDir string, opt Options) (*Store, error) {
	if opt.MaxConns <= 0 {
		opt.MaxConns = 16
	}
	var s *Store
	var err error
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		s, err = openPostgres(url, opt)
	default:
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			if dataDir == "" {
				dataDir = "."
			}
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				return nil, fmt.Errorf("store: create data folder: %w", err)
			}
			if filepath.Clean(dataDir) != "." {
				privateMode(dataDir, 0o700)
			}
			path = filepath.Join(dataDir, "patchd.db")
		}
		if err := privateFiles(path); err != nil {
			return nil, err
		}
		s, err = openSQLite(path, opt)
	}
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.read.PingContext(pingCtx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if !opt.SkipMigrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func openPostgres(url string, opt Options) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	db.SetMaxOpenConns(opt.MaxConns)
	db.SetMaxIdleConns(opt.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{engine: Postgres, url: url, read: db, write: db}, nil
}

func openSQLite(path string, opt Options) (*Store, error) {
	// The writer keeps a larger page cache (64 MiB) than each reader
	// (4 MiB: there may be 16 of them, and SQLite's memory is outside the
	// Go heap, beyond GOMEMLIMIT), since every inventory touches the same
	// index pages; the writer's temporary tables stay in memory, the
	// readers' (report sorts) go to temporary files. No memory map: each
	// connection would map the file again, and the pages count once per
	// mapping in the process's resident memory.
	pragmas := "_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	inFile := path != "" && !strings.HasPrefix(path, ":") && !strings.Contains(path, "mode=memory")
	writer := pragmas + "&_pragma=temp_store(MEMORY)&_pragma=cache_size(-65536)&_txlock=immediate"
	if inFile {
		writer += fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", walSafetyPages)
	}
	w, err := sql.Open("sqlite", "file:"+path+"?"+writer)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	// One writer: SQLite serialises writes anyway, and a single connection
	// turns lock contention into a queue in Go instead of busy retries.
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	if _, err := w.Exec("PRAGMA journal_mode=WAL"); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: sqlite WAL: %w", err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+pragmas+"&_pragma=cache_size(-4096)&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open sqlite reader: %w", err)
	}
	r.SetMaxOpenConns(opt.MaxConns)
	r.SetMaxIdleConns(opt.MaxConns)
	// Readers a burst opened close after a while idle, with their caches.
	r.SetConnMaxIdleTime(2 * time.Minute)
	s := &Store{engine: SQLite, read: r, write: w, facts: &checkinFacts{}}
	if inFile {
		if s.checkpoints, err = startCheckpointer(path, pragmas); err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("store: open sqlite checkpointer: %w", err)
		}
	}
	return s, nil
}

// privateFiles creates the SQLite file path readable and writable by its
// owner only (0600), and takes group and other permissions off an existing
// one and its -wal and -shm files (Open does the same for the data folder,
// 0700): the database holds webhook secrets and
// BitLocker recovery keys. SQLite creates the -wal and -shm files with the
// permissions of the database file. An in-memory database (":memory:" and
// the like) is left alone.
func privateFiles(path string) error {
	if path == "" || strings.HasPrefix(path, ":") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: create sqlite file: %w", err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: sqlite file: %w", err)
		}
		privateMode(p, fi.Mode().Perm()&0o700)
	}
	return nil
}

// privateMode takes group and other permissions off path, the data folder
// or a database file, when it has any. Another user's file this process may
// write through its group cannot be changed: that is said, not fatal.
func privateMode(path string, mode os.FileMode) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if err := os.Chmod(path, mode); err != nil {
		slog.Warn("store: the database or its folder is open to other users and its mode could not be changed",
			"path", path, "mode", fi.Mode().Perm().String(), "err", err)
	}
}

// Engine says which database engine the store runs on.
func (s *Store) Engine() string { return s.engine }

// PostgresURL is the connection URL when the engine is PostgreSQL.
func (s *Store) PostgresURL() string { return s.url }

// Close closes the connections.
func (s *Store) Close() error {
	var err error
	if s.checkpoints != nil {
		err = s.checkpoints.close()
	}
	err = errors.Join(err, s.read.Close())
	if s.write != s.read {
		err = errors.Join(err, s.write.Close())
	}
	return err
}

// Ping checks that the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Stats reports the connection pool (for metrics).
func (s *Store) Stats() (read, write sql.DBStats) {
	return s.read.Stats(), s.write.Stats()
}

// q rewrites '?' placeholders to $n for PostgreSQL. Queries in this package
// never contain a literal '?' inside strings.
func (s *Store) q(query string) string {
	if s.engine != Postgres {
		return query
	}
	if v, ok := s.rebind.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	s.rebind.Store(query, out)
	return out
}

// exec runs a statement on the writer outside a transaction.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := s.write.ExecContext(ctx, s.q(query), args...)
	s.noteWrite(err)
	return res, err
}

func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, s.q(query), args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.QueryRowContext(ctx, s.q(query), args...)
}

// Tx is a write transaction. On SQLite it prepares each statement once per
// transaction: storing an inventory runs the same few statements a hundred
// times, and parsing them was a sixth of its cost.
type Tx struct {
	s     *Store
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	// newTitles are software titles this transaction created.
	newTitles map[[2]string]int64
	// newKeys are update keys this transaction created or found.
	newKeys map[[2]string]bool
	// counts are the counter differences applied just before the commit.
	counts counts
	// groupsChanged says the transaction changes a group or its members
	// (the cached group lists are stale once it commits).
	groupsChanged bool
	// checkinsApplied are the check-ins whose facts this transaction wrote
	// or found written (SQLite: remembered in checkinFacts at the commit).
	checkinsApplied []Checkin
}

// stmt answers the transaction's prepared statement for query, or nil on
// PostgreSQL, whose driver caches prepared statements itself.
func (t *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.s.engine != SQLite {
		return nil
	}
	if st, ok := t.stmts[query]; ok {
		return st
	}
	st, err := t.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil // the plain call reports the error
	}
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	t.stmts[query] = st
	return st
}

func (t *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.s.q(query), args...)
}

func (t *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.s.q(query), args...)
}

// queryStrings answers the one text column of a query's rows.
func (t *Tx) queryStrings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (t *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.s.q(query), args...)
}

// InTx runs fn in one write transaction, committed when fn returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		s.noteWrite(err)
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{s: s, tx: sqlTx}
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		s.noteWrite(err)
		return err
	}
	if err := tx.applyCounts(ctx); err != nil {
		sqlTx.Rollback()
		s.noteWrite(err)
		return err
	}
	// Remembered while the transaction holds the write lock: no other
	// write transaction, an enrollment forgetting an endpoint, runs between
	// the commit and this (checkinFacts).
	s.facts.remember(tx.checkinsApplied, time.Now())
	if err := sqlTx.Commit(); err != nil {
		for _, c := range tx.checkinsApplied {
			s.facts.forget(c.EndpointID)
		}
		s.noteWrite(err)
		return fmt.Errorf("store: commit: %w", err)
	}
	s.noteWrite(nil)
	titles.publish(tx.newTitles)
	updateKeys.publish(tx.newKeys)
	if tx.groupsChanged {
		s.groupsGen.Add(1)
	}
	return nil
}

// Audited runs fn in one write transaction and records e in the Audit Trail
// in that same transaction, so a change and its audit entry land together.
// fn may fill in e (a target id known only once created, a summary).
func (s *Store) Audited(ctx context.Context, e *AuditEntry, fn func(tx *Tx) error) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.insertAudit(ctx, e)
	})
}

// millis converts a time to the stored form.
func millis(t time.Time) int64 { return t.UTC().UnixMilli() }

// fromMillis converts a stored time back.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// nullTime converts a nullable stored time.
func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMillis(v.Int64)
	return &t
}

// nullMillis converts a nullable time to the stored form.
func nullMillis(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return millis(*t)
}

func nullString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// isUniqueViolation tells whether err is a unique-constraint failure.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "SQLSTATE 23505")
}
