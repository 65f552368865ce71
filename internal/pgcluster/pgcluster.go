// Package pgcluster makes throwaway PostgreSQL servers for tests: a primary
// made with initdb and streaming standbys made from it with
// pg_basebackup -R, each on a port and in a folder of its own, with the
// PostgreSQL binaries of /usr/lib/postgresql/*/bin. Run as root, the
// servers run as the postgres user (initdb refuses root).
package pgcluster

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Bin is the folder of the newest PostgreSQL's binaries, or "" when there
// is none.
func Bin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// Server is one PostgreSQL server of a test.
type Server struct {
	t    testing.TB
	bin  string
	Dir  string // data folder
	Port int
	cred *syscall.Credential
}

// Cluster is a primary and its standbys.
type Cluster struct {
	t        testing.TB
	bin      string
	root     string
	cred     *syscall.Credential
	Primary  *Server
	Standbys []*Server
}

// New makes a primary (skipping t when PostgreSQL is not installed) with
// database "patchd"; standbys are added with AddStandby. Everything stops
// and is removed when t ends.
func New(t testing.TB) *Cluster {
	t.Helper()
	bin := Bin()
	if bin == "" {
		t.Skip("PostgreSQL binaries not found in /usr/lib/postgresql/*/bin")
	}
	c := &Cluster{t: t, bin: bin}
	root, err := os.MkdirTemp("", "pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	c.root = root
	t.Cleanup(func() { os.RemoveAll(root) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user for initdb")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p := c.server("primary")
	p.run("initdb", "-D", p.Dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	p.appendConf(`wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
fsync = off
`)
	p.appendHBA("host replication all 127.0.0.1/32 trust\n")
	p.Start()
	p.Exec("CREATE DATABASE patchd")
	c.Primary = p
	return c
}

func (c *Cluster) server(name string) *Server {
	dir := filepath.Join(c.root, name)
	s := &Server{t: c.t, bin: c.bin, Dir: dir, Port: freePort(c.t), cred: c.cred}
	c.t.Cleanup(func() { s.stopQuietly() })
	return s
}

// AddStandby makes a streaming standby of the primary with pg_basebackup
// -R, started; sync makes it the primary's synchronous standby.
func (c *Cluster) AddStandby(name string, sync bool) *Server {
	c.t.Helper()
	s := c.server(name)
	s.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Primary.Port), "-U", "postgres",
		"-D", s.Dir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	s.appendConf(fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'\n", c.Primary.Port, name))
	s.Start()
	if sync {
		c.Primary.Exec(fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", name))
		c.Primary.Exec("SELECT pg_reload_conf()")
	}
	c.Standbys = append(c.Standbys, s)
	return s
}

// URL is the server's patchd database URL.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/patchd?sslmode=disable&connect_timeout=3", s.Port)
}

// HostPort is 127.0.0.1:port.
func (s *Server) HostPort() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// MultiHost is a URL naming several servers that connects to the one
// taking writes (target_session_attrs=read-write), as --db takes it.
func MultiHost(servers ...*Server) string {
	var hosts []string
	for _, s := range servers {
		hosts = append(hosts, s.HostPort())
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/patchd?sslmode=disable&connect_timeout=3&target_session_attrs=read-write"
}

// Start starts the server and waits until it takes connections.
func (s *Server) Start() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.Dir, "-l", filepath.Join(s.Dir, "server.log"), "-w", "-t", "120",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", s.Port, s.Dir), "start")
}

// Stop stops the server; mode is smart, fast or immediate (a crash).
func (s *Server) Stop(mode string) {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.Dir, "-w", "-t", "120", "-m", mode, "stop")
}

func (s *Server) stopQuietly() {
	if _, err := os.Stat(filepath.Join(s.Dir, "postmaster.pid")); err != nil {
		return
	}
	cmd := s.cmd("pg_ctl", "-D", s.Dir, "-w", "-t", "60", "-m", "immediate", "stop")
	_ = cmd.Run()
}

// Promote makes a standby the primary and waits until it takes writes.
func (s *Server) Promote() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.Dir, "-w", "-t", "120", "promote")
}

// Exec runs statements on the server's patchd database (postgres for
// CREATE DATABASE).
func (s *Server) Exec(query string, args ...any) {
	s.t.Helper()
	if err := s.TryExec(query, args...); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
}

// TryExec is Exec answering its error.
func (s *Server) TryExec(query string, args ...any) error {
	dbname := "patchd"
	if strings.HasPrefix(query, "CREATE DATABASE") {
		dbname = "postgres"
	}
	db, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", s.Port, dbname))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, query, args...)
	return err
}

func (s *Server) appendConf(text string) { s.appendFile("postgresql.auto.conf", text) }
func (s *Server) appendHBA(text string)  { s.appendFile("pg_hba.conf", text) }

func (s *Server) appendFile(name, text string) {
	s.t.Helper()
	f, err := os.OpenFile(filepath.Join(s.Dir, name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Dir = "/"
	}
	return cmd
}

func (s *Server) run(name string, args ...string) {
	s.t.Helper()
	out, err := s.cmd(name, args...).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
		s.t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, tail(log))
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
