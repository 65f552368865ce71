package storetest

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

// Cut is a store whose database a test can make unreachable, as an outage
// would, under a server that keeps running.
type Cut struct {
	Store *store.Store
	// URL reopens the same database once Restore was called (SQLite: at
	// once, the file being intact).
	URL string

	cut     func()
	restore func()
}

// Cut makes the database unreachable: on PostgreSQL every connection is
// dropped and new ones are refused (the server went away); on SQLite the
// store's pools are closed under the server (no connection can be had).
func (c *Cut) Cut() { c.cut() }

// Restore makes a PostgreSQL database reachable again (new connections
// are accepted). On SQLite the closed pools stay closed; open c.URL again
// to look at what the database holds.
func (c *Cut) Restore() { c.restore() }

// OpenCut opens an empty, migrated store for t, as Open does, that the
// test can cut from its database. On PostgreSQL the store connects through
// a TCP relay the test controls.
func OpenCut(t testing.TB) *Cut {
	t.Helper()
	u := URL(t)
	if !strings.HasPrefix(u, "postgres") {
		s, err := store.Open(context.Background(), u, "", store.Options{MaxConns: 8, SecretKey: SecretKey})
		if err != nil {
			t.Fatalf("storetest: open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return &Cut{Store: s, URL: u, cut: func() { s.Close() }, restore: func() {}}
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	target := parsed.Host
	if parsed.Port() == "" {
		target = net.JoinHostPort(parsed.Hostname(), "5432")
	}
	r := &relay{target: target}
	if err := r.listen("127.0.0.1:0"); err != nil {
		t.Fatalf("storetest: relay: %v", err)
	}
	addr := r.ln.Addr().String()
	t.Cleanup(r.stop)
	parsed.Host = addr
	s, err := store.Open(context.Background(), parsed.String(), "", store.Options{MaxConns: 8, SecretKey: SecretKey})
	if err != nil {
		t.Fatalf("storetest: open through relay: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &Cut{Store: s, URL: u, cut: r.stop, restore: func() {
		if err := r.listen(addr); err != nil {
			t.Fatalf("storetest: relay: listen again on %s: %v", addr, err)
		}
	}}
}

// relay forwards TCP connections to target until stopped.
type relay struct {
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func (r *relay) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ln = ln
	if r.conns == nil {
		r.conns = map[net.Conn]bool{}
	}
	r.mu.Unlock()
	go r.accept(ln)
	return nil
}

func (r *relay) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		if r.ln != ln { // stopped meanwhile
			r.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		r.conns[c], r.conns[up] = true, true
		r.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// stop refuses new connections and drops the open ones.
func (r *relay) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// FailUpdates makes every UPDATE of table in the database at u fail, as a
// full disk fails writes while reads go on (PostgreSQL: SQLSTATE 53100
// disk_full from a trigger; SQLite: a trigger's RAISE(ABORT)), until the
// function it answers is called. With column, only the updates that leave
// column not null fail.
func FailUpdates(t testing.TB, u, table string, column ...string) (undo func()) {
	t.Helper()
	driver, dsn := "pgx", u
	when := ""
	if len(column) > 0 {
		when = ` WHEN (NEW.` + column[0] + ` IS NOT NULL)`
	}
	stmts := []string{
		`CREATE FUNCTION fail_updates_` + table + `() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device (test)' USING ERRCODE = 'disk_full'; END $$ LANGUAGE plpgsql`,
		`CREATE TRIGGER fail_updates BEFORE UPDATE ON ` + table + ` FOR EACH ROW` + when + ` EXECUTE FUNCTION fail_updates_` + table + `()`,
	}
	drop := []string{`DROP TRIGGER fail_updates ON ` + table, `DROP FUNCTION fail_updates_` + table + `()`}
	if !strings.HasPrefix(u, "postgres") {
		driver, dsn = "sqlite", "file:"+strings.TrimPrefix(u, "sqlite:")+"?_pragma=busy_timeout(10000)"
		stmts = []string{`CREATE TRIGGER fail_updates BEFORE UPDATE ON ` + table + when + ` BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END`}
		drop = []string{`DROP TRIGGER fail_updates`}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("storetest: fail updates of %s: %v", table, err)
		}
	}
	return func() {
		t.Helper()
		for _, q := range drop {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("storetest: stop failing updates of %s: %v", table, err)
			}
		}
	}
}
