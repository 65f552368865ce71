package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/version"
)

// patchd runs the command line against the test's database and answers the
// exit code, standard output and standard error.
func patchd(t *testing.T, db, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{}, args...)
	// --data/--db go after the subcommand words, before positional arguments.
	words := 1
	switch {
	case len(args) > 2 && args[0] == "admin" && args[1] == "user" && (args[2] == "operator" || args[2] == "create-orgs"):
		words = 4
	case len(args) > 0 && args[0] == "admin":
		words = 3
	case len(args) > 0 && args[0] == "vulndb":
		words = 2
	}
	if len(full) >= words {
		full = append(append(append([]string{}, full[:words]...), "--db", db), full[words:]...)
	}
	code := Main(context.Background(), full, IO{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not one JSON object: %q: %v", s, err)
	}
	return m
}

// cliTest runs the command line against a database of the test's own.
type cliTest struct {
	t  *testing.T
	db string // its URL
	// neverPrints, when set, is a secret no successful command may print.
	neverPrints string
}

func newCLITest(t *testing.T) *cliTest {
	return &cliTest{t: t, db: storetest.URL(t)}
}

// ok runs a command that must succeed and answers the JSON object it
// prints.
func (c *cliTest) ok(stdin string, args ...string) map[string]any {
	c.t.Helper()
	code, out, errOut := patchd(c.t, c.db, stdin, args...)
	if code != 0 {
		c.t.Fatalf("patchd %v: exit %d: %s", args, code, errOut)
	}
	if c.neverPrints != "" && strings.Contains(out, c.neverPrints) {
		c.t.Fatalf("patchd %v printed the secret: %s", args, out)
	}
	return decode(c.t, out)
}

// fail runs a command that must fail: a non-zero exit, want in what it
// writes to standard error, nothing on standard output.
func (c *cliTest) fail(want string, args ...string) {
	c.t.Helper()
	c.failIn("", want, args...)
}

// failIn is fail with stdin as the command's standard input.
func (c *cliTest) failIn(stdin, want string, args ...string) {
	c.t.Helper()
	code, out, errOut := patchd(c.t, c.db, stdin, args...)
	if code == 0 || !strings.Contains(errOut, want) || out != "" {
		c.t.Fatalf("patchd %v: exit %d %q %q, want an error with %q", args, code, out, errOut, want)
	}
}

// open opens the test's database as the server does, until the test ends.
func (c *cliTest) open() *store.Store {
	c.t.Helper()
	s, err := store.Open(context.Background(), c.db, c.t.TempDir(), store.Options{MaxConns: 2, SecretKey: storetest.SecretKey})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	db, ok := c.db, c.ok

	m := ok("", "migrate")
	if m["ok"] != true || m["schemaVersion"].(float64) < 1 {
		t.Fatalf("migrate: %v", m)
	}
	org := ok("", "admin", "org", "create", "--name", "Acme", "--timezone", "Europe/Berlin")
	if org["name"] != "Acme" || org["timezone"] != "Europe/Berlin" || org["id"] == "" {
		t.Fatalf("org create: %v", org)
	}
	if list := ok("", "admin", "org", "list"); list["total"].(float64) != 1 {
		t.Fatalf("org list: %v", list)
	}
	role := ok("", "admin", "role", "create", "--org", "Acme", "--name", "Patchers", "--permissions", "api.access,updates.view,updates.manage")
	if perms := role["permissions"].([]any); len(perms) != 3 {
		t.Fatalf("role create: %v", role)
	}
	cred := ok("", "admin", "credential", "create", "--org", org["id"].(string), "--name", "ci", "--role", "Patchers")
	clientID, _ := cred["client_id"].(string)
	if !strings.HasPrefix(clientID, "pdc_") || !strings.HasPrefix(cred["client_secret"].(string), "pds_") || cred["role"] != "Patchers" {
		t.Fatalf("credential create: %v", cred)
	}
	if list := ok("", "admin", "credential", "list", "--org", "Acme"); list["total"].(float64) != 1 {
		t.Fatalf("credential list: %v", list)
	} else if strings.Contains(fmtJSON(list), "secret") {
		t.Fatalf("credential list shows a secret: %v", list)
	}
	if c := ok("", "admin", "credential", "disable", "--org", "Acme", "--client-id", clientID); c["disabled"] != true {
		t.Fatalf("disable: %v", c)
	}
	if c := ok("", "admin", "credential", "enable", "--org", "Acme", "--client-id", clientID); c["disabled"] != false {
		t.Fatalf("enable: %v", c)
	}
	if c := ok("", "admin", "credential", "delete", "--org", "Acme", "--client-id", clientID); c["deleted"] != true {
		t.Fatalf("delete: %v", c)
	}
	tok := ok("", "admin", "enroll-token", "create", "--org", "Acme", "--expires", "24h")
	if !strings.HasPrefix(tok["token"].(string), "pde_") || tok["expiresAt"] == nil {
		t.Fatalf("enroll-token create: %v", tok)
	}
	if tok2 := ok("", "admin", "enroll-token", "create", "--org", "Acme", "--expires", "never"); tok2["expiresAt"] != nil {
		t.Fatalf("enroll-token never: %v", tok2)
	}
	if list := ok("", "admin", "enroll-token", "list", "--org", "Acme"); list["total"].(float64) != 2 {
		t.Fatalf("enroll-token list: %v", list)
	}
	if r := ok("", "admin", "enroll-token", "revoke", "--org", "Acme", "--id", tok["id"].(string)); r["revoked"] != true {
		t.Fatalf("revoke: %v", r)
	}
	u := ok("a long enough password\n", "admin", "user", "create", "--org", "Acme", "--email", "Alice@Example.com", "--role", "Administrator", "--password-stdin")
	if u["email"] != "alice@example.com" || u["role"] != "Administrator" {
		t.Fatalf("user create: %v", u)
	}

	code, out, errOut := patchd(t, db, "", "admin", "audit", "list", "--org", "Acme", "--limit", "50")
	if code != 0 {
		t.Fatalf("audit list: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var actions []string
	for _, l := range lines {
		e := decode(t, l)
		if e["actor"] != "admin:cli" {
			t.Fatalf("audit actor: %v", e)
		}
		actions = append(actions, e["action"].(string))
	}
	want := "user.create enroll_token.revoke enroll_token.create enroll_token.create credential.delete credential.enable credential.disable credential.create org.create"
	if strings.Join(actions, " ") != want {
		t.Fatalf("audit actions:\n got %s\nwant %s", strings.Join(actions, " "), want)
	}
	code, out, _ = patchd(t, db, "", "admin", "audit", "list", "--org", "Acme", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("audit list --limit 2: %q", out)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	db := storetest.URL(t)
	patchd(t, db, "", "admin", "org", "create", "--name", "Acme")
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
		text  string
	}{
		{[]string{"admin", "org", "create"}, "", 1, "--name is required"},
		{[]string{"admin", "org", "create", "--name", "Acme"}, "", 1, "exists"},
		{[]string{"admin", "org", "create", "--name", "X", "--timezone", "Mars/Olympus"}, "", 1, "time zone"},
		{[]string{"admin", "role", "create", "--org", "Acme", "--name", "R", "--permissions", "alerts.view"}, "", 1, "unknown permission"},
		{[]string{"admin", "credential", "create", "--org", "Nope", "--name", "x", "--role", "Administrator"}, "", 1, "not found"},
		{[]string{"admin", "credential", "create", "--org", "Acme", "--name", "x", "--role", "Nope"}, "", 1, "not found"},
		{[]string{"admin", "credential", "disable", "--org", "Acme", "--client-id", "pdc_x"}, "", 1, "not found"},
		{[]string{"admin", "user", "create", "--org", "Acme", "--email", "a@b.c", "--role", "Administrator", "--password-stdin"}, "short\n", 1, "at least 12"},
		{[]string{"admin", "user", "create", "--org", "Acme", "--email", "not-mail", "--role", "Administrator", "--password-stdin"}, "long enough password\n", 1, "not an e-mail"},
		{[]string{"admin", "user", "create", "--org", "Acme", "--email", "a@b.c", "--role", "Administrator"}, "", 2, "--password-stdin"},
		{[]string{"admin", "enroll-token", "create", "--org", "Acme", "--expires", "soon"}, "", 2, "duration"},
		{[]string{"admin", "frobnicate", "now"}, "", 2, "unknown admin command"},
		{[]string{"admin", "org", "create", "--bogus"}, "", 2, "flag provided but not defined"},
		{[]string{"admin", "org", "create", "--name", "Y", "extra"}, "", 2, "unexpected argument"},
	} {
		code, _, errOut := patchd(t, db, c.stdin, c.args...)
		if code != c.code || !strings.Contains(errOut, c.text) {
			t.Errorf("patchd %v: exit %d %q, want %d containing %q", c.args, code, errOut, c.code, c.text)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"nonsense"}, IO{Out: &out, Err: &errOut}); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
}

// TestHelpOfEveryCommand: -h and --help print, on standard output with
// exit 0, what a command takes: a command's usage line and flags, an
// object's commands. (backup, vulndb and the table's commands printed
// nothing.)
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 || errOut.Len() > 0 {
			t.Fatalf("patchd %v: exit %d, stderr %q", args, code, errOut.String())
		}
		return out.String()
	}
	for _, name := range append(adminTableNames(), "backup", "restore", "agent publish", "agent package") {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string{"admin"}, strings.Fields(name)...), flag)
			if out := help(args...); !strings.HasPrefix(out, "usage: patchd admin "+name+" [flags]") || !strings.Contains(out, "-data") {
				t.Errorf("patchd %v printed %q", args, out)
			}
		}
	}
	for _, verb := range []string{"import", "sync"} {
		if out := help("vulndb", verb, "-h"); !strings.HasPrefix(out, "usage: patchd vulndb "+verb+" [flags]") || !strings.Contains(out, "-db") {
			t.Errorf("patchd vulndb %s -h printed %q", verb, out)
		}
	}
	if out := help("vulndb", "--help"); !strings.Contains(out, "patchd vulndb import FILE") || !strings.Contains(out, "patchd vulndb sync") {
		t.Errorf("patchd vulndb --help printed %q", out)
	}
	for object, want := range map[string]string{"org": "patchd admin org create", "user": "patchd admin user operator grant", "agent": "patchd admin agent package"} {
		for _, args := range [][]string{{"admin", object}, {"admin", object, "--help"}} {
			if out := help(args...); !strings.Contains(out, want) {
				t.Errorf("patchd %v printed %q", args, out)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"admin", "nosuch", "--help"}, IO{Out: &out, Err: &errOut}); code != 2 || !strings.Contains(errOut.String(), `unknown admin object "nosuch"`) {
		t.Errorf("an unknown object: exit %d %q", code, errOut.String())
	}
}

// TestVersionCommand: patchd version prints the build's version, commit,
// date and Go version (scripts/release sets them with -X).
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("patchd version: exit %d: %s", code, errOut.String())
	}
	if want := "patchd " + version.Get().String() + "\n"; out.String() != want {
		t.Fatalf("patchd version: %q, want %q", out.String(), want)
	}
}
