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

	"github.com/patchd/patchd/internal/secretbox"
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
	// readStmts holds SQLite read statements: database/sql prepares each
	// once per connection of the read pool and reuses it, where a plain
	// query is parsed again on every call (the largest part of a cheap
	// read such as GET /api/v1/groups).
	readStmts stmtCache
	// writeStmts holds the SQLite writer's statements across transactions:
	// an inventory batch otherwise parses its multi-row inserts again in
	// each transaction, work taken from the single writer while a fleet
	// enrolls.
	writeStmts stmtCache
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
	// planStats analyzes a growing fleet's tables (PostgreSQL; nil on
	// SQLite).
	planStats *planStats
	// keys seals and opens the secrets the database holds (secrets.go);
	// nil only in a store opened with SkipMigrate and no key.
	keys atomic.Pointer[secretbox.Keyring]
	// serverVersion is the patchd version Migrate records (Options).
	serverVersion string
	// repl watches the primary and the standbys lag-tolerant reads go to
	// (standby.go; nil on SQLite).
	repl *replication
}

// maxStmts bounds a statement cache; queries whose text varies with their
// arguments (IN lists) beyond it are parsed each time.
const maxStmts = 256

// stmtCache holds the prepared statements of one SQLite pool by query
// text, at most maxStmts of them.
type stmtCache struct {
	db *sql.DB
	m  sync.Map // query text -> *sql.Stmt
	n  atomic.Int32
	// once are the query texts seen once (at most maxOnce), for a cache
	// that keeps a statement only when it comes again (see again).
	once  sync.Map // query text -> struct{}
	nOnce atomic.Int32
}

// maxOnce bounds stmtCache.once.
const maxOnce = 4096

// again tells whether query was seen before, and remembers it otherwise:
// the writer caches a statement the second time it is prepared, so that
// the one-off statements (migrations, bulk statements whose text follows
// their rows) do not fill its cache.
func (c *stmtCache) again(query string) bool {
	if _, ok := c.once.Load(query); ok {
		return true
	}
	if c.nOnce.Load() < maxOnce {
		if _, loaded := c.once.LoadOrStore(query, struct{}{}); !loaded {
			c.nOnce.Add(1)
		}
	}
	return false
}

// get answers the cached statement for query, or nil without a pool
// (PostgreSQL: pgx caches prepared statements itself) or when it is not
// cached.
func (c *stmtCache) get(query string) *sql.Stmt {
	if c.db == nil {
		return nil
	}
	if v, ok := c.m.Load(query); ok {
		return v.(*sql.Stmt)
	}
	return nil
}

// add prepares query on the pool and caches it, unless the cache is full
// or the statement does not prepare (the plain call reports that); it
// answers the cached statement or nil.
func (c *stmtCache) add(ctx context.Context, query string) *sql.Stmt {
	if c.db == nil || c.n.Load() >= maxStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if v, loaded := c.m.LoadOrStore(query, st); loaded {
		st.Close()
		return v.(*sql.Stmt)
	}
	c.n.Add(1)
	return st
}

// readStmt answers the cached read statement for query, prepared now if
// it is not cached yet, or nil (see stmtCache).
func (s *Store) readStmt(ctx context.Context, query string) *sql.Stmt {
	if st := s.readStmts.get(query); st != nil {
		return st
	}
	return s.readStmts.add(ctx, query)
}

// Options tunes Open.
type Options struct {
	// MaxConns bounds the PostgreSQL pool and the SQLite read pool.
	MaxConns int
	// SkipMigrate opens without applying migrations (nor sealing the
	// secrets an older version stored in clear).
	SkipMigrate bool
	// SecretKey is the key ring that seals the database's secrets; Open
	// refuses a database whose secrets it does not open.
	SecretKey SecretKey
	// ServerVersion is this program's patchd version: Migrate records it
	// with the schema version, and a server that finds migrations it does
	// not know names it beside the version that applied them. Empty
	// means "dev".
	ServerVersion string
	// ReadURLs are PostgreSQL standbys that serve the reads whose context
	// tolerates lag (MayLag; standby.go). ReadMaxLag is the lag past which
	// a standby is skipped (default DefaultReadMaxLag); ReadCheckEvery how
	// often the standbys' lag is measured (default a second, or a quarter
	// of ReadMaxLag when smaller).
	ReadURLs       []string
	ReadMaxLag     time.Duration
	ReadCheckEvery time.Duration
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
	s.serverVersion = opt.ServerVersion
	if s.serverVersion == "" {
		s.serverVersion = "dev"
	}
	if !opt.SkipMigrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.openSecrets(ctx, opt.SecretKey); err != nil {
			s.Close()
			return nil, err
		}
	} else if opt.SecretKey != (SecretKey{}) {
		ring, err := loadSecretKey(opt.SecretKey)
		if err != nil {
			s.Close()
			return nil, err
		}
		if ring != nil {
			s.keys.Store(ring)
		}
	}
	if s.engine == Postgres {
		if err := s.openPlanStats(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("store: planner statistics: %w", err)
		}
		if err := s.openReplication(opt); err != nil {
			s.Close()
			return nil, err
		}
	} else if len(opt.ReadURLs) > 0 {
		s.Close()
		return nil, errors.New("store: standbys (--db-read) need a PostgreSQL --db")
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
	s.readStmts.db, s.writeStmts.db = r, w
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
// 0700): the database holds every computer's inventory, and its secrets
// sealed (secrets.go). SQLite creates the -wal and -shm files with the
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
	s.planStats.close()
	s.repl.close()
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

// query and queryRow read on the primary, or on a standby when ctx
// tolerates lag (MayLag); a standby that fails the read hands it to the
// primary.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if db, sb := s.reader(ctx); sb != nil {
		rows, err := db.QueryContext(ctx, s.q(query), args...)
		if !s.failedOn(sb, err) {
			return rows, err
		}
	}
	if st := s.readStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.QueryContext(ctx, s.q(query), args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if db, sb := s.reader(ctx); sb != nil {
		row := db.QueryRowContext(ctx, s.q(query), args...)
		if !s.failedOn(sb, row.Err()) {
			return row
		}
	}
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
	// uncached are the queries this transaction prepared for itself that
	// the writer's statement cache is to keep (SQLite).
	uncached []string
}

// stmt answers the transaction's prepared statement for query, or nil on
// PostgreSQL, whose driver caches prepared statements itself. On SQLite
// it is the writer's cached statement (prepared on the one writer
// connection, so the transaction uses it as it is), or one prepared for
// this transaction; a statement prepared that way the second time is
// cached for the next ones once the transaction ended (cacheStmts).
func (t *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if t.s.engine != SQLite {
		return nil
	}
	if st, ok := t.stmts[query]; ok {
		return st
	}
	var st *sql.Stmt
	if cached := t.s.writeStmts.get(query); cached != nil {
		st = t.tx.StmtContext(ctx, cached)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(ctx, query); err != nil {
			return nil // the plain call reports the error
		}
		if t.s.writeStmts.again(query) {
			t.uncached = append(t.uncached, query)
		}
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
	return scanRows(rows, err, scanString)
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
	err = fn(tx)
	if err == nil {
		err = tx.applyCounts(ctx)
	}
	if err != nil {
		sqlTx.Rollback()
		tx.cacheStmts()
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
		tx.cacheStmts()
		s.noteWrite(err)
		return fmt.Errorf("store: commit: %w", err)
	}
	tx.cacheStmts()
	s.noteWrite(nil)
	titles.publish(tx.newTitles)
	updateKeys.publish(tx.newKeys)
	if tx.groupsChanged {
		s.groupsGen.Add(1)
	}
	return nil
}

// cacheStmts prepares the statements the transaction prepared for itself
// into the writer's cache, once the transaction let go of the writer's
// one connection (the connection may be another transaction's by then:
// this waits for it). Only new query texts come here, a few hundred at
// most in a process's life (maxStmts).
func (t *Tx) cacheStmts() {
	for _, q := range t.uncached {
		if t.s.writeStmts.add(context.Background(), q) == nil {
			return
		}
	}
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
